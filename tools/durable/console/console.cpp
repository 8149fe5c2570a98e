#include "console.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>  // cpp-httplib (Debian: libcpp-httplib-dev)
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <durable/errors.hpp>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "api.hpp"
#include "assets.hpp"
#include "console_text.hpp"

namespace durable::console {
namespace {

using Clock = std::chrono::steady_clock;

struct Listen {
  std::string host;
  int port = 0;
  bool loopback = false;
};

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0;
  return false;  // any other name may resolve to anything
}

Listen parse_listen(const std::string& text) {
  const auto bad = [&text](const std::string& why) {
    return InvalidOptions("console listen address '" + text + "': " + why +
                          " (host:port, e.g. 127.0.0.1:8233 or [::1]:8233; port 0 picks a free one)");
  };
  Listen listen;
  std::string port;
  if (!text.empty() && text.front() == '[') {  // [IPv6]:port
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') throw bad("no ]:port");
    listen.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) throw bad("no port");
    if (text.find(':') != colon) throw bad("an IPv6 address goes in brackets");
    listen.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (listen.host.empty()) throw bad("no host");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
    throw bad("the port must be a number");
  }
  listen.port = std::stoi(port);
  if (listen.port > 65535) throw bad("the port must be at most 65535");
  listen.loopback = is_loopback(listen.host);
  return listen;
}

// "https://ops.example.com[:port]" -> "ops.example.com[:port]", the Host a proxy may pass on.
std::string public_authority(const std::string& origin) {
  static const std::regex form(R"(https?://([a-z0-9.-]+|\[[0-9a-f:.]+\])(:([0-9]{1,5}))?)");
  std::smatch m;
  if (!std::regex_match(origin, m, form) || (m[3].matched && std::stoi(m[3]) > 65535)) {
    throw InvalidOptions("console public origin '" + detail::one_line(origin) +
                         "': give scheme://host[:port] as the browser's address bar shows it, in lower case and "
                         "without a path (e.g. https://ops.example.com)");
  }
  return origin.substr(origin.find("://") + 3);
}

// 32 random bytes, hex: std::random_device reads the kernel's generator on Linux.
std::string random_token() {
  std::random_device device;
  std::string out;
  for (int i = 0; i < 8; ++i) {
    const std::uint32_t word = device();
    for (int shift = 0; shift < 32; shift += 4) out += "0123456789abcdef"[(word >> shift) & 0xf];
  }
  return out;
}

// Compares secrets in a time that depends only on the length of `given` (the caller's own): not
// on where they differ, nor on the secret's length.
bool same_secret(std::string_view given, std::string_view secret) {
  std::size_t diff = given.size() ^ secret.size();
  for (std::size_t i = 0; i < given.size(); ++i) {
    const auto expected = secret.empty() ? 0u : static_cast<unsigned char>(secret[i % secret.size()]);
    diff |= static_cast<unsigned char>(given[i]) ^ expected;
  }
  return diff == 0;
}

// Every JSON answer: bytes that are not UTF-8 (in an error message quoting its input, say) are
// replaced, never a reason to throw while answering.
void send_json(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json; charset=utf-8");
}

// On one line: libpq's messages (in a DatabaseError) span several.
void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, status, {{"error", detail::one_line(message)}});
}

// What an answer httplib refused before any route ran says.
std::string refusal_message(int status) {
  switch (status) {
    case 404: return "not found";
    case 416: return "the Range header does not parse; the console answers whole, so send none";
    default: return "request refused";
  }
}

// What a handler's exception tells the client. Never throws: it runs inside the server's catch.
std::pair<int, std::string> status_of(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const WorkflowNotFound& e) {
    return {404, e.what()};
  } catch (const ScheduleNotFound& e) {
    return {404, e.what()};
  } catch (const WorkflowAlreadyStarted& e) {
    return {409, e.what()};
  } catch (const InvalidArgument& e) {  // InvalidRunState included
    return {400, e.what()};
  } catch (const Json::exception& e) {
    return {400, std::string("malformed JSON: ") + e.what()};
  } catch (const DatabaseError& e) {
    return {503, std::string("database: ") + e.what()};
  } catch (const std::exception& e) {
    return {500, e.what()};
  } catch (...) {
    return {500, "unexpected error"};
  }
}

// Every response: no inline script or style, no framing, no sniffing, no referrer leaks.
void set_security_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Cache-Control", "no-store");
}

std::string bearer(const httplib::Request& req) {
  const std::string value = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  return value.rfind(prefix, 0) == 0 ? value.substr(prefix.size()) : std::string{};
}

const std::set<std::string>& action_paths() {
  static const std::set<std::string> paths{"/api/actions/cancel", "/api/actions/resume", "/api/actions/fork",
                                           "/api/actions/terminate"};
  return paths;
}

// cpp-httplib's request parser and router, run on a stream we give it: the console does its own
// accepting, so that it bounds connections, times and sizes (httplib::Server's own loop would
// let a few slow clients hold every thread of its pool).
class Router : public httplib::Server {
 public:
  // Answers one request read from `stream`, always whole: a Range header is ignored (as RFC 9110
  // lets a server do), since a slice of a JSON answer is no JSON.
  void answer(httplib::Stream& stream) {
    bool closed = false;
    process_request(stream, true, closed, [](httplib::Request& req) { req.ranges.clear(); });
  }
};

// A request given as bytes, and the answer collected (Console::answer).
class MemoryStream final : public httplib::Stream {
 public:
  explicit MemoryStream(std::string_view in) : in_(in) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const std::size_t n = std::min(size, in_.size());
    std::memcpy(ptr, in_.data(), n);
    in_.remove_prefix(n);
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 0;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override { get_remote_ip_and_port(ip, port); }
  socket_t socket() const override { return INVALID_SOCKET; }
  std::string out;

 private:
  std::string_view in_;
};

// A connection's socket, read through a buffer with a timeout per wait, a deadline for the whole
// request and a cap on the bytes read; written with a timeout per wait.
class SocketStream final : public httplib::Stream {
 public:
  SocketStream(int fd, const ConsoleOptions& options)
      : fd_(fd),
        read_timeout_(options.read_timeout),
        write_timeout_(options.write_timeout),
        request_deadline_(options.request_deadline),
        deadline_(Clock::now() + options.request_deadline),
        // Room for the request line and headers beyond the body: httplib bounds each line, not their number.
        budget_(options.max_body_bytes + 64 * 1024) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    if (next_ == end_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
      if (budget_ == 0 || !wait(POLLIN, std::min(left, read_timeout_))) return -1;
      const ssize_t n = ::recv(fd_, buffer_, std::min(sizeof buffer_, budget_), 0);
      if (n <= 0) return n;
      budget_ -= static_cast<std::size_t>(n);
      next_ = 0;
      end_ = static_cast<std::size_t>(n);
    }
    const std::size_t n = std::min(size, end_ - next_);
    std::memcpy(ptr, buffer_ + next_, n);
    next_ += n;
    return static_cast<ssize_t>(n);
  }
  // The answer too must be taken within request_deadline of its first byte: a client reading a
  // byte at a time holds its thread no longer.
  ssize_t write(const char* ptr, size_t size) override {
    if (!answer_deadline_) answer_deadline_ = Clock::now() + request_deadline_;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*answer_deadline_ - Clock::now());
    if (!wait(POLLOUT, std::min(left, write_timeout_))) return -1;
    return ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);  // what fits now; httplib sends the rest
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  // httplib refuses (500) a socket past select()'s FD_SETSIZE; this stream polls, so it has no such limit.
  socket_t socket() const override { return INVALID_SOCKET; }

 private:
  bool wait(short events, std::chrono::milliseconds limit) const {
    if (limit.count() <= 0) return false;
    pollfd p{fd_, events, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, static_cast<int>(limit.count()));
    } while (ready < 0 && errno == EINTR);
    return ready == 1;
  }
  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    char text[INET6_ADDRSTRLEN] = "";
    port = 0;
    if (get(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
        getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
      port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                        : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    }
    ip = text;
  }

  int fd_;
  std::chrono::milliseconds read_timeout_, write_timeout_, request_deadline_;
  Clock::time_point deadline_;
  std::optional<Clock::time_point> answer_deadline_;
  std::size_t budget_;
  char buffer_[4096];
  std::size_t next_ = 0, end_ = 0;
};

// A listening socket on `listen`, or -1.
int bind_listener(const Listen& listen) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(listen.host.c_str(), std::to_string(listen.port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    // Non-blocking: a connection reset between poll() and accept() must not block the acceptor.
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  return addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                    : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

}  // namespace

struct Console::Impl {
  Engine& engine;
  ConsoleOptions options;
  Listen listen;
  std::string public_host;  // public_origin without its scheme
  std::string csrf = random_token();
  Router router;
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

  Impl(Engine& e, ConsoleOptions o) : engine(e), options(std::move(o)), listen(parse_listen(options.listen)) {
    if (!listen.loopback && options.token.empty()) {
      throw InvalidOptions("console listen address '" + options.listen +
                           "' is not loopback: give a token (--token-file), anyone who reaches it could act on runs");
    }
    if (!options.public_origin.empty()) public_host = public_authority(options.public_origin);
    if (options.max_body_bytes == 0 || options.max_connections == 0 || options.read_timeout.count() <= 0 ||
        options.write_timeout.count() <= 0 || options.request_deadline.count() <= 0) {
      throw InvalidOptions(
          "console limits (max_body_bytes, max_connections, read_timeout, write_timeout, request_deadline) must be "
          "positive");
    }
    if (options.token.empty()) options.token = random_token();
    routes();
  }

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
                            (host != public_host && origin == "http://" + host);
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
      return refuse(403, "unexpected Host header: open the console at http://127.0.0.1:" + std::to_string(port));
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
    router.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) { set_security_headers(res); });
    router.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
      const auto [status, message] = status_of(error);
      send_error(res, status, message);
    });
    router.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
      if (res.body.empty()) send_error(res, res.status, refusal_message(res.status));
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

    Runs* runs = &engine.runs();  // lives as long as the engine, which outlives the console
    router.Get("/api/runs", [runs](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::runs_page(*runs, req.params));
    });
    router.Get("/api/counts", [runs](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::run_counts(*runs, req.params));
    });
    router.Get("/api/run", [runs](const httplib::Request& req, httplib::Response& res) {
      send_json(res, 200, detail::run(*runs, req.get_param_value("id")));
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
  }

  // Answers the one request of connection `fd` (no keep-alive: a connection holds a worker for
  // one request at most), then lets the client read the answer before closing.
  void serve(int fd) noexcept {
    try {
      SocketStream stream(fd, options);
      router.answer(stream);
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
        refuse_busy(fd);
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
  impl.listener = bind_listener(impl.listen);
  const int bound = impl.listener < 0 ? -1 : bound_port(impl.listener);
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
  MemoryStream stream(request);
  try {
    impl_->router.answer(stream);
  } catch (...) {  // as in serve(): nothing the router throws leaves the console
  }
  return stream.out;
}

}  // namespace durable::console
