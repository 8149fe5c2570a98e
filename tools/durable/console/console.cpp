// The console's server: its routes and the checks before them (console.hpp), and its own accept
// loop handing each connection to a worker thread. Where it listens is listen.cpp, the streams
// it reads and writes streams.cpp, its answers answers.cpp, its secrets secrets.cpp.
#include "console.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>  // cpp-httplib (Debian: libcpp-httplib-dev)
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <durable/errors.hpp>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "answers.hpp"
#include "api.hpp"
#include "assets.hpp"
#include "console_text.hpp"
#include "listen.hpp"
#include "secrets.hpp"
#include "streams.hpp"
#include "tls.hpp"

namespace durable::console {
namespace {

using Clock = std::chrono::steady_clock;
using detail::bearer;
using detail::random_token;
using detail::same_secret;
using detail::send_error;
using detail::send_json;

const std::set<std::string>& action_paths() {
  static const std::set<std::string> paths{"/api/actions/cancel",      "/api/actions/resume",
                                           "/api/actions/fork",        "/api/actions/terminate",
                                           "/api/actions/pause-queue", "/api/actions/resume-queue"};
  return paths;
}

}  // namespace

namespace detail {

// cpp-httplib's request parser and router, run on a stream we give it: the console does its own
// accepting, so that it bounds connections, times and sizes (httplib::Server's own loop would
// let a few slow clients hold every thread of its pool).
class Router : public httplib::Server {
 public:
  // Answers one request read from `stream`, always whole: a Range header is ignored (as RFC 9110
  // lets a server do), since a slice of a JSON answer is no JSON. A request line looser than
  // RFC 9112's is refused before httplib reads it.
  void answer(httplib::Stream& stream) {
    detail::RequestLineStream checked(stream);
    if (!checked.well_formed()) {
      httplib::Response res;
      send_error(res, 400, "the request line is malformed: it is METHOD SP target SP HTTP/1.1, single spaces, no tabs");
      detail::set_security_headers(res);
      res.set_header("Connection", "close");
      detail::write_answer(checked, res, "Bad Request");
      return;
    }
    bool closed = false;
    process_request(checked, true, closed, [](httplib::Request& req) { req.ranges.clear(); });
  }
};

}  // namespace detail

struct Console::Impl {
  Engine& engine;
  ConsoleOptions options;
  detail::Listen listen;
  std::string public_host;  // public_origin without its scheme
  std::string csrf = random_token();
  detail::Router router;
  std::unique_ptr<detail::TlsContext> tls;  // with tls_cert and tls_key: HTTPS
  std::atomic<int> port{0};

  // Connections: one accepting thread; workers, started as needed up to max_connections, each
  // answering one connection at a time.
  int listener = -1;
  std::thread acceptor;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::deque<int> queued;  // accepted, not yet taken by a worker
  std::set<int> serving;   // taken by a worker
  std::vector<std::thread> workers;
  std::size_t idle = 0;  // workers waiting for a connection, none promised one

  Impl(Engine& e, ConsoleOptions o) : engine(e), options(std::move(o)), listen(detail::parse_listen(options.listen)) {
    if (!listen.loopback && options.token.empty()) {
      throw InvalidOptions("console listen address '" + options.listen +
                           "' is not loopback: give a token (--token-file), anyone who reaches it could act on runs");
    }
    if (!options.public_origin.empty()) public_host = detail::public_authority(options.public_origin);
    if (options.max_body_bytes == 0 || options.max_connections == 0 || options.read_timeout.count() <= 0 ||
        options.write_timeout.count() <= 0 || options.request_deadline.count() <= 0) {
      throw InvalidOptions(
          "console limits (max_body_bytes, max_connections, read_timeout, write_timeout, request_deadline) must be "
          "positive");
    }
    if (options.token.empty()) options.token = random_token();
    if (!options.tls_cert.empty() || !options.tls_key.empty()) {
      tls = std::make_unique<detail::TlsContext>(options.tls_cert, options.tls_key);
    }
    routes();
  }

  std::string scheme() const { return tls ? "https" : "http"; }

  // On loopback, only a loopback Host (or the public origin's) is served: a page of another site
  // whose name was rebound to 127.0.0.1 (DNS rebinding) gets nothing.
  bool host_allowed(const httplib::Request& req) const {
    if (!listen.loopback) return true;
    const std::string host = req.get_header_value("Host");
    const std::string p = ":" + std::to_string(port);
    const std::string own = listen.host.find(':') != std::string::npos ? "[" + listen.host + "]" : listen.host;
    return host == "127.0.0.1" + p || host == "localhost" + p || host == "[::1]" + p || host == own + p ||
           (!public_host.empty() && host == public_host);
  }

  // An action must carry the token (proves who), the page's CSRF token and, when the browser
  // says where it comes from, this origin (proves it is this console's page asking).
  bool action_allowed(const httplib::Request& req, httplib::Response& res) const {
    if (options.read_only) {
      send_error(res, 403, "the console is read-only: actions are refused");
      return false;
    }
    if (!same_secret(bearer(req), options.token)) {
      send_error(res, 401, "an action needs the console's token (Authorization: Bearer <token>)");
      return false;
    }
    const std::string origin = req.get_header_value("Origin");
    const std::string site = req.get_header_value("Sec-Fetch-Site");
    // Through the proxy the browser is at the public origin, whichever Host the proxy passes on.
    const std::string host = req.get_header_value("Host");
    const bool own_origin = origin.empty() || (!public_host.empty() && origin == options.public_origin) ||
                            (host != public_host && origin == scheme() + "://" + host);
    if (!same_secret(req.get_header_value("X-Durable-CSRF"), csrf) || !own_origin ||
        (!site.empty() && site != "same-origin")) {
      send_error(res, 403, "cross-site request refused: actions come from the console's own page");
      return false;
    }
    if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
      send_error(res, 415, "an action's body is JSON (Content-Type: application/json)");
      return false;
    }
    return true;
  }

  // Before any body is read: who may ask, what may be asked, and how much may be sent.
  httplib::Server::HandlerResponse gate(const httplib::Request& req, httplib::Response& res) const {
    const auto refuse = [&res](int status, const std::string& message) {
      send_error(res, status, message);
      return httplib::Server::HandlerResponse::Handled;
    };
    if (!host_allowed(req)) {
      return refuse(403,
                    "unexpected Host header: open the console at " + scheme() + "://127.0.0.1:" + std::to_string(port));
    }
    // Off loopback, the token guards reads too: run inputs and results may be confidential.
    if (!listen.loopback && req.path.rfind("/api/", 0) == 0 && !same_secret(bearer(req), options.token)) {
      return refuse(401, "this console needs its token (Authorization: Bearer <token>)");
    }
    // Ids and filters go to the management API and into its error messages: UTF-8 text only.
    for (const auto& [key, value] : req.params) {
      if (!detail::is_text(key) || !detail::is_text(value)) {
        return refuse(400, detail::is_text(key) ? "query parameter '" + key + "' is not UTF-8 text (or holds a NUL)"
                                                : "a query parameter's name is not UTF-8 text (or holds a NUL)");
      }
    }
    if (req.method == "POST") {
      if (action_paths().count(req.path) == 0) return refuse(404, "not found");
      const std::string length = req.get_header_value("Content-Length");
      std::uint64_t bytes = 0;
      const auto [end, error] = std::from_chars(length.data(), length.data() + length.size(), bytes);
      if (!length.empty() && (error == std::errc::result_out_of_range || bytes > options.max_body_bytes)) {
        return refuse(413, fmt::format("the request body is over {} bytes", options.max_body_bytes));
      }
      if (!length.empty() && (error != std::errc{} || end != length.data() + length.size())) {
        return refuse(400, "the Content-Length header is not a number");
      }
    } else if (req.method != "GET" && req.method != "HEAD") {
      return refuse(405, "the console answers GET, and POST for actions");
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  // An action's body, read up to max_body_bytes; nullopt once it has answered (413, 400).
  std::optional<std::string> read_body(const httplib::ContentReader& read, httplib::Response& res) const {
    std::string body;
    bool too_long = false;
    const bool whole = read([&](const char* data, std::size_t n) {
      too_long = n > options.max_body_bytes - body.size();
      if (!too_long) body.append(data, n);
      return !too_long;
    });
    if (too_long) {
      send_error(res, 413, fmt::format("the request body is over {} bytes", options.max_body_bytes));
      return std::nullopt;
    }
    if (!whole) {
      send_error(res, 400, "the request body could not be read: cut short, malformed chunks or an unknown encoding");
      return std::nullopt;
    }
    return body;
  }

  void routes() {
    router.set_pre_routing_handler(
        [this](const httplib::Request& req, httplib::Response& res) { return gate(req, res); });
    router.set_post_routing_handler(
        [](const httplib::Request&, httplib::Response& res) { detail::set_security_headers(res); });
    router.set_exception_handler([](const httplib::Request&, httplib::Response& res, const std::exception_ptr& error) {
      const auto [status, message] = detail::status_of(error);
      send_error(res, status, message);
    });
    router.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
      if (res.body.empty()) send_error(res, res.status, detail::refusal_message(res.status));
      if (res.status != 416) return httplib::Server::HandlerResponse::Handled;
      // A Range that does not parse is refused before Router::answer clears the ranges: Handled
      // would slice this answer by what did parse. Unhandled, httplib writes it as it is.
      res.set_header("Content-Length", std::to_string(res.body.size()));
      return httplib::Server::HandlerResponse::Unhandled;
    }));

    for (const auto& asset : detail::assets()) {
      const std::string content(reinterpret_cast<const char*>(asset.data), asset.size);
      const std::string type = asset.content_type;
      if (std::string(asset.name) == "index.html") {
        // The page carries the CSRF token actions echo, and says whether actions are offered.
        std::string page = content;
        const auto put = [&page](const std::string& key, const std::string& value) {
          page.replace(page.find(key), key.size(), value);
        };
        put("{{csrf}}", csrf);
        put("{{read_only}}", options.read_only ? "true" : "false");
        router.Get("/", [page, type](const httplib::Request&, httplib::Response& res) { res.set_content(page, type); });
      } else {
        router.Get(
            "/assets/" + std::string(asset.name),
            [content, type](const httplib::Request&, httplib::Response& res) { res.set_content(content, type); });
      }
    }

    reads();
    actions();
  }

  // GET /api/...: what the pages read.
  void reads() {
    Runs* runs = &engine.runs();  // lives as long as the engine, which outlives the console
    router.Get("/api/runs", [runs](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::runs_page(*runs, req.params));
    });
    router.Get("/api/counts", [runs](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::run_counts(*runs, req.params));
    });
    router.Get("/api/run", [runs](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::run(*runs, RunId{req.get_param_value("id")}));
    });
    router.Get("/api/history", [runs](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::history(*runs, req.params));
    });
    router.Get("/api/schedules", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, detail::schedules(engine.schedules()));
    });
    router.Get("/api/overview", [this, runs](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, detail::overview(*runs, engine.schedules()));
    });
    router.Get("/api/queues", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, detail::queues(engine.queues()));
    });
    // Any bytes as the name, "", "a/b" and a newline included: Queues::get refuses what is no
    // queue name (400), before it asks the database.
    router.Get(R"(/api/queues/([\s\S]*))", [this](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::queue(engine.queues(), req.matches[1]));
    });
  }

  // POST /api/actions/...: the operator's actions, each checked by action_allowed and audited.
  void actions() {
    Runs* runs = &engine.runs();
    // A content-reader handler: the body is read here, bounded, after the checks.
    router.Post(R"(/api/actions/(cancel|resume|fork|terminate))",
                [this, runs](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read) {
                  if (!action_allowed(req, res)) return;
                  const auto text = read_body(read, res);
                  if (!text) return;
                  const std::string verb = req.matches[1];
                  const Json body = Json::parse(*text);
                  Json outcome = detail::act(*runs, verb, body, options.actor);
                  spdlog::info("console: {} of run {} by {}: {}", verb, detail::one_line(body.value("run_id", "")),
                               detail::one_line(options.actor), detail::one_line(body.value("reason", "")));
                  send_json(res, 200, outcome);
                });
    router.Post(R"(/api/actions/(pause|resume)-queue)",
                [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read) {
                  if (!action_allowed(req, res)) return;
                  const auto text = read_body(read, res);
                  if (!text) return;
                  const std::string verb = req.matches[1];
                  const Json body = Json::parse(*text);
                  Json outcome = detail::act_on_queue(engine.queues(), verb + "-queue", body, options.actor);
                  spdlog::info("console: {} of queue {} by {}: {}", verb, detail::one_line(body.value("queue", "")),
                               detail::one_line(options.actor), detail::one_line(body.value("reason", "")));
                  send_json(res, 200, outcome);
                });
  }

  // Answers the one request of connection `fd` (no keep-alive: a connection holds a worker for
  // one request at most), then lets the client read the answer before closing.
  void serve(int fd) noexcept {
    try {
      std::optional<detail::TlsSession> session;
      if (tls) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);  // OpenSSL's reads and writes wait by our polls
        session.emplace(*tls, fd);
      }
      detail::SocketStream stream(fd, options, session ? &*session : nullptr);
      if (!stream.handshake()) return;  // no TLS client, or one too slow: closed unanswered
      router.answer(stream);
      if (session) session->close_notify();
    } catch (...) {  // the exception handler answers what handlers throw; this is for what it cannot (memory)
    }
    // Unread bytes at close() would reset the connection and could drop the answer: read what
    // the client still sends (the rest of a refused body), for a moment, and drop it.
    ::shutdown(fd, SHUT_WR);
    const auto until = Clock::now() + std::chrono::milliseconds{500};
    char sink[4096];
    for (pollfd p{fd, POLLIN, 0}; Clock::now() < until && ::poll(&p, 1, 100) == 1;) {
      if (::recv(fd, sink, sizeof sink, 0) <= 0) break;
    }
  }

  void work() {
    // OpenSSL writes with write(), not send(MSG_NOSIGNAL): to a connection the client reset, that
    // raises SIGPIPE, which would end the whole process. Blocked here, the write fails (EPIPE).
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    std::unique_lock lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || !queued.empty(); });
      if (stopping) return;
      const int fd = queued.front();
      queued.pop_front();
      serving.insert(fd);
      lock.unlock();
      serve(fd);
      lock.lock();
      serving.erase(fd);
      ::close(fd);  // under the lock: stop() shuts down only the sockets in `serving`
      ++idle;
    }
  }

  // A connection past max_connections: 503, without a thread (the send does not wait).
  static void refuse_busy(int fd) {
    static const std::string body = R"({"error": "too many connections to the console at once: try again"})";
    static const std::string busy = fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        body.size(), body);
    (void)::send(fd, busy.data(), busy.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    char sink[4096];  // what the request already sent, so that close() does not reset the answer away
    while (::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
    ::close(fd);
  }

  void accept_connections() {
    for (;;) {
      pollfd p{listener, POLLIN, 0};
      const int ready = ::poll(&p, 1, 200);
      std::unique_lock lock(mutex);
      if (stopping) return;
      if (ready != 1) continue;
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      if (queued.size() + serving.size() >= options.max_connections) {
        lock.unlock();
        if (tls) {
          ::close(fd);  // a 503 would need a handshake, which needs a thread
        } else {
          refuse_busy(fd);
        }
        continue;
      }
      queued.push_back(fd);
      if (idle > 0) {
        --idle;
        wake.notify_one();
      } else {
        workers.emplace_back([this] { work(); });
      }
    }
  }

  void stop() {
    if (!acceptor.joinable()) return;
    {
      std::lock_guard lock(mutex);
      stopping = true;
      for (const int fd : serving) ::shutdown(fd, SHUT_RD);  // a request still arriving is cut off
    }
    wake.notify_all();
    acceptor.join();
    for (auto& w : workers) w.join();
    workers.clear();
    for (const int fd : queued) ::close(fd);
    queued.clear();
    idle = 0;
    ::close(listener);
    listener = -1;
    stopping = false;
  }
};

Console::Console(Engine& engine, ConsoleOptions options) : impl_(std::make_unique<Impl>(engine, std::move(options))) {}

Console::~Console() { stop(); }

void Console::start() {
  Impl& impl = *impl_;
  if (impl.acceptor.joinable()) return;
  impl.listener = detail::bind_listener(impl.listen);
  const int bound = impl.listener < 0 ? -1 : detail::bound_port(impl.listener);
  if (bound < 0) {
    if (impl.listener >= 0) ::close(impl.listener);
    impl.listener = -1;
    throw Error("the console could not listen on " + impl.options.listen + " (in use, or not local)");
  }
  impl.port = bound;
  impl.acceptor = std::thread([&impl] { impl.accept_connections(); });
}

int Console::port() const { return impl_->port; }

const std::string& Console::token() const { return impl_->options.token; }

void Console::stop() { impl_->stop(); }

std::string Console::answer(std::string_view request) {
  detail::MemoryStream stream(request);
  try {
    impl_->router.answer(stream);
  } catch (...) {  // as in serve(): nothing the router throws leaves the console
  }
  return stream.out;
}

}  // namespace durable::console
