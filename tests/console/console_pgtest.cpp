// The web console under hostile input, over raw loopback sockets: bytes that are not UTF-8,
// slow and oversized requests, out-of-range input, the token and the origin checks. Each request
// is written byte for byte, as an attacker would, not through an HTTP client that tidies it up.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <console.hpp>
#include <regex>
#include <sstream>

#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace std::chrono_literals;
using durable::console::Console;
using namespace durable::test;  // RunningEngine, wait_until, the test workflows
using Json = nlohmann::json;

namespace {

// A connected loopback socket to the console, closed at the end.
class Connection {
 public:
  explicit Connection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~Connection() { ::close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends what it can within `limit`; false once the peer stops reading or has closed.
  bool send(std::string_view bytes, std::chrono::milliseconds limit = 2s) {
    while (!bytes.empty()) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(limit.count())) != 1) return false;
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Everything the peer sends until it closes or `limit` passes.
  std::string receive(std::chrono::milliseconds limit = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::string out;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1) return out;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  // Whether the peer has closed (or reset) the connection within `limit`.
  bool closed_within(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) == 1) {
        char buf[4096];
        if (::recv(fd_, buf, sizeof buf, 0) <= 0) return true;
      }
    }
    return false;
  }

 private:
  int fd_;
};

struct Answer {
  int status = 0;  // 0: no answer
  std::string body;
};

Answer parse(const std::string& raw) {
  std::smatch m;
  if (!std::regex_search(raw, m, std::regex(R"(^HTTP/1\.1 (\d{3}) )"))) return {};
  const auto split = raw.find("\r\n\r\n");
  return {std::stoi(m[1]), split == std::string::npos ? std::string{} : raw.substr(split + 4)};
}

// One request, written as given, and the console's answer.
Answer exchange(int port, const std::string& request) {
  Connection c(port);
  c.send(request);
  return parse(c.receive());
}

std::string host(const Console& console) { return "127.0.0.1:" + std::to_string(console.port()); }

std::string get(const Console& console, const std::string& target, const std::string& headers = "") {
  return "GET " + target + " HTTP/1.1\r\nHost: " + host(console) + "\r\nConnection: close\r\n" + headers + "\r\n";
}

// The page's CSRF token, which actions echo.
std::string csrf_of(const Console& console) {
  const Answer page = exchange(console.port(), get(console, "/"));
  std::smatch m;
  REQUIRE(std::regex_search(page.body, m, std::regex(R"re(name="durable-csrf" content="([0-9a-f]+)")re")));
  return m[1];
}

// An action as the console's page sends it, with `body` as given.
std::string action(const Console& console, const std::string& verb, const std::string& body,
                   const std::string& extra_headers = "") {
  return "POST /api/actions/" + verb + " HTTP/1.1\r\nHost: " + host(console) +
         "\r\nConnection: close\r\nAuthorization: Bearer s3cret\r\nX-Durable-CSRF: " + csrf_of(console) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         extra_headers + "\r\n" + body;
}

// `bytes` gzip-compressed, as a client sends a body with Content-Encoding: gzip.
std::string gzip(const std::string& bytes) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

bool is_json_error(const Answer& a) {
  const Json body = Json::parse(a.body, nullptr, false);
  return body.is_object() && body.contains("error") && body["error"].is_string() &&
         body["error"].get<std::string>().find('\n') == std::string::npos;
}

}  // namespace

TEST_CASE(
    "a request with bytes that are not UTF-8 in its query or path or headers or body gets a 4xx and the console keeps "
    "serving",
    "[pg][console]") {
  RunningEngine env;
  const auto run = env.engine.start_workflow<durable::test::ApprovalWorkflow>("waiting", 3'600'000);
  Console console(env.engine, {.listen = "127.0.0.1:0", .token = "s3cret"});
  console.start();

  for (const std::string target :
       {"/api/run?id=%FF", "/api/run?id=ab%C3", "/api/history?id=%FF%FE", "/api/runs?prefix=%FF",
        "/api/runs?name=%80abc", "/api/runs?status=%FF", "/api/runs?cursor=%FF.x", "/api/counts?prefix=%C0%AF",
        "/api/run?id=a%00b", "/%FF", "/api/%FF%FE", "/api/run?id=\xff"}) {
    INFO(target);
    const Answer a = exchange(console.port(), get(console, target));
    CHECK(a.status >= 400);
    CHECK(a.status < 500);
    CHECK(is_json_error(a));
  }
  for (const std::string& body : {std::string("{\"run_id\": \"\xff\", \"reason\": \"x\"}"), std::string("\xff\xfe"),
                                  "{\"run_id\": \"" + run.run_id().str() + "\", \"reason\": \"\xc3\"}"}) {
    INFO(body);
    const Answer a = exchange(console.port(), action(console, "cancel", body));
    CHECK(a.status == 400);
    CHECK(is_json_error(a));
  }
  CHECK(exchange(console.port(), get(console, "/api/runs", "X-Junk: \xff\xfe\r\n")).status == 200);
  CHECK(run.status() == durable::WorkflowStatus::running);
}

TEST_CASE("twenty slow connections do not stall a normal request", "[pg][console]") {
  RunningEngine env;
  Console console(env.engine, {.listen = "127.0.0.1:0"});
  console.start();
  std::vector<std::unique_ptr<Connection>> slow;
  for (int i = 0; i < 24; ++i) {
    slow.push_back(std::make_unique<Connection>(console.port()));
    slow.back()->send("GET /api/runs HTTP/1.1\r\nHost: " + host(console) + "\r\n");  // and never the rest
  }
  const auto before = std::chrono::steady_clock::now();
  Connection normal(console.port());
  normal.send(get(console, "/api/runs"));
  const Answer a = parse(normal.receive(2s));
  CHECK(a.status == 200);
  CHECK(std::chrono::steady_clock::now() - before < 2s);
}

TEST_CASE("a body past the limit gets 413 with a Content-Length or without one or chunked or compressed",
          "[pg][console]") {
  RunningEngine env;
  Console console(env.engine, {.listen = "127.0.0.1:0", .token = "s3cret"});
  console.start();
  const std::string head =
      "POST /api/actions/cancel HTTP/1.1\r\nHost: " + host(console) +
      "\r\nConnection: close\r\nAuthorization: Bearer s3cret\r\nX-Durable-CSRF: " + csrf_of(console) +
      "\r\nContent-Type: application/json\r\n";
  const std::string kib(1024, ' ');

  SECTION("a Content-Length past the limit") {
    Connection c(console.port());
    c.send(head + "Content-Length: 10000000\r\n\r\n" + kib);
    CHECK(parse(c.receive()).status == 413);
  }
  SECTION("chunked, sent on and on") {
    Connection c(console.port());
    c.send(head + "Transfer-Encoding: chunked\r\n\r\n");
    std::string chunk = "400\r\n" + kib + "\r\n";
    for (int i = 0; i < 100'000 && c.send(chunk, 200ms); ++i) {  // up to 100 MiB: the console stops reading long before
    }
    CHECK(parse(c.receive()).status == 413);
  }
  SECTION("no length at all, the body running to the end of the connection") {
    Connection c(console.port());
    c.send(head + "\r\n");
    for (int i = 0; i < 100'000 && c.send(kib, 200ms); ++i) {
    }
    CHECK(parse(c.receive()).status == 413);
  }
  SECTION("compressed: small on the wire, past the limit unpacked") {
    const std::string packed = gzip(std::string(10 * 1024 * 1024, ' '));
    REQUIRE(packed.size() < 64 * 1024);
    Connection c(console.port());
    c.send(head + "Content-Encoding: gzip\r\nContent-Length: " + std::to_string(packed.size()) + "\r\n\r\n" + packed);
    CHECK(parse(c.receive()).status == 413);
  }
  // The console serves on.
  CHECK(exchange(console.port(), get(console, "/api/runs")).status == 200);
}

TEST_CASE("connections past max_connections are answered 503 and closed and served again once others end",
          "[pg][console]") {
  RunningEngine env;
  Console console(env.engine, {.listen = "127.0.0.1:0", .max_connections = 2, .request_deadline = 1s});
  console.start();
  {
    Connection slow1(console.port()), slow2(console.port());
    slow1.send("GET / HTTP/1.1\r\n");
    slow2.send("GET / HTTP/1.1\r\n");
    const Answer refused = exchange(console.port(), get(console, "/api/runs"));
    CHECK(refused.status == 503);
    CHECK(is_json_error(refused));
  }
  CHECK(wait_until([&] { return exchange(console.port(), get(console, "/api/runs")).status == 200; }, 5s));
}

TEST_CASE("a request that trickles in is cut off at the request deadline and the console serves on", "[pg][console]") {
  RunningEngine env;
  Console console(env.engine, {.listen = "127.0.0.1:0", .request_deadline = 1s});
  console.start();
  Connection trickle(console.port());
  const std::string request = get(console, "/api/runs", std::string(200, 'x') + ": y\r\n");
  const auto start = std::chrono::steady_clock::now();
  for (char byte : request) {  // a byte every 50 ms: never idle for a whole read timeout
    if (!trickle.send(std::string(1, byte)) || std::chrono::steady_clock::now() - start > 5s) break;
    std::this_thread::sleep_for(50ms);
  }
  CHECK(trickle.closed_within(3s));
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(exchange(console.port(), get(console, "/api/runs")).status == 200);
}

TEST_CASE("console input out of range is a 400 with a one-line message and a taken workflow id a 409",
          "[pg][console]") {
  RunningEngine env;
  const auto run = env.engine.start_workflow<durable::test::ApprovalWorkflow>("waiting", 3'600'000);
  const auto other = env.engine.start_workflow<durable::test::ApprovalWorkflow>("taken", 3'600'000);
  Console console(env.engine, {.listen = "127.0.0.1:0", .token = "s3cret"});
  console.start();
  const auto fork = [&](const std::string& step, const std::string& id = "forked") {
    return exchange(console.port(),
                    action(console, "fork",
                           R"({"run_id": ")" + run.run_id().str() + R"(", "reason": "r", "from_step": )" + step +
                               R"(, "workflow_id": ")" + id + "\"}"));
  };
  for (const std::string step :
       {"4294967297", "-1", "18446744073709551615", "-9223372036854775808", "1e30", "1.5", "\"1\""}) {
    INFO(step);
    const Answer a = fork(step);
    CHECK(a.status == 400);
    CHECK(is_json_error(a));
  }
  CHECK(env.db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'forked'") == 0);
  const Answer taken = fork("0", "taken");
  CHECK(taken.status == 409);
  CHECK(is_json_error(taken));
  for (const std::string& target : {std::string("/api/runs?limit=99999999999"), std::string("/api/runs?limit=-5"),
                                    "/api/history?id=" + run.run_id().str() + "&from_seq=99999999999999999999"}) {
    INFO(target);
    const Answer a = exchange(console.port(), get(console, target));
    CHECK(a.status == 400);
    CHECK(is_json_error(a));
  }
  (void)other;
}

TEST_CASE("the token is compared whole: a prefix or a longer string is refused", "[pg][console]") {
  RunningEngine env;
  const auto run = env.engine.start_workflow<durable::test::ApprovalWorkflow>("waiting", 3'600'000);
  Console console(env.engine, {.listen = "127.0.0.1:0", .token = "s3cret"});
  console.start();
  const std::string body = R"({"run_id": ")" + run.run_id().str() + R"(", "reason": "r"})";
  for (const std::string token : {"s3cre", "s3crets", "", "s3cret s3cret"}) {
    std::string request = action(console, "cancel", body);
    request.replace(request.find("Bearer s3cret"), 13, "Bearer " + token);
    CHECK(exchange(console.port(), request).status == 401);
  }
  CHECK(run.status() == durable::WorkflowStatus::running);
}

TEST_CASE("behind a TLS proxy an action from the console's public origin goes through and another origin's does not",
          "[pg][console]") {
  RunningEngine env;
  const auto run = env.engine.start_workflow<durable::test::ApprovalWorkflow>("waiting", 3'600'000);
  const std::string body = R"({"run_id": ")" + run.run_id().str() + R"(", "reason": "from the proxy"})";
  // What a proxy for https://ops.example.com passes on: the browser's Origin, and (nginx's
  // `proxy_set_header Host $host`) the public host name.
  const auto proxied = [&](const Console& console, const std::string& origin, const std::string& host_name) {
    std::string request = action(console, "cancel", body, "Origin: " + origin + "\r\nSec-Fetch-Site: same-origin\r\n");
    request.replace(request.find("Host: " + host(console)), 6 + host(console).size(), "Host: " + host_name);
    return exchange(console.port(), request).status;
  };

  SECTION("without --public-origin the proxied action is refused") {
    Console console(env.engine, {.listen = "127.0.0.1:0", .token = "s3cret"});
    console.start();
    CHECK(proxied(console, "https://ops.example.com", "ops.example.com") == 403);
    CHECK(proxied(console, "https://ops.example.com", host(console)) == 403);
  }
  SECTION("with it, that origin is accepted, with the proxy's Host or the public one, and no other") {
    Console console(env.engine,
                    {.listen = "127.0.0.1:0", .token = "s3cret", .public_origin = "https://ops.example.com"});
    console.start();
    CHECK(proxied(console, "https://evil.example", "ops.example.com") == 403);
    CHECK(proxied(console, "http://ops.example.com", "ops.example.com") == 403);
    CHECK(proxied(console, "https://ops.example.com", "evil.example") == 403);
    CHECK(run.status() == durable::WorkflowStatus::running);
    CHECK(proxied(console, "https://ops.example.com", "ops.example.com") == 200);
    CHECK(wait_until([&] { return run.status() == durable::WorkflowStatus::cancelled; }));
  }
  SECTION("a public origin that is not scheme://host[:port] is refused at construction") {
    for (const auto* bad : {"ops.example.com", "https://", "https://ops.example.com/console", "ftp://ops.example.com",
                            "https://ops.example.com:99999"}) {
      INFO(bad);
      CHECK_THROWS_AS(Console(env.engine, {.listen = "127.0.0.1:0", .public_origin = bad}), durable::InvalidOptions);
    }
  }
}

TEST_CASE("a reason with newlines and control characters cannot forge a console log line", "[pg][console]") {
  RunningEngine env;
  const auto run = env.engine.start_workflow<durable::test::ApprovalWorkflow>("waiting", 3'600'000);
  Console console(env.engine, {.listen = "127.0.0.1:0", .token = "s3cret"});
  console.start();
  std::ostringstream log;
  const auto previous = spdlog::default_logger();
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  const Json body{{"run_id", run.run_id()},
                  {"reason", "tidy\nconsole: terminate of run all by admin: forged\r\x1b[2Jgone"}};
  const Answer a = exchange(console.port(), action(console, "cancel", body.dump()));
  spdlog::set_default_logger(previous);
  CHECK(a.status == 200);
  const std::string text = log.str();
  INFO(text);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find("tidy\\nconsole: terminate") != std::string::npos);
}

TEST_CASE("a raw request is answered without a socket by the same router", "[pg][console]") {
  RunningEngine env;
  Console console(env.engine, {.listen = "127.0.0.1:0"});
  CHECK(parse(console.answer("GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1:0\r\n\r\n")).status == 200);
  CHECK(parse(console.answer("GET /api/run?id=%FF HTTP/1.1\r\nHost: 127.0.0.1:0\r\n\r\n")).status == 400);
  CHECK(parse(console.answer("GET /api/runs HTTP/1.1\r\nHost: evil.example\r\n\r\n")).status == 403);
  CHECK(parse(console.answer("\xff\xfe garbage")).status == 400);
  CHECK(console.answer("").empty());  // nothing asked, nothing answered
}

// Found by the console fuzzer: a Range past the end of a short JSON answer was a 416 labelled
// application/json with no body at all. An API answer is never sliced; it is whole, or a JSON error.
TEST_CASE("a Range header never leaves a JSON answer without its body", "[pg][console]") {
  RunningEngine env;
  Console console(env.engine, {.listen = "127.0.0.1:0"});
  for (const auto* range :
       {"bytes=099-9993", "bytes=0-3", "bytes=-5", "bytes=5-", "bytes=0-1,2-3", "bytes=abc", "bytes=0-1,5-3"}) {
    for (const auto* target : {"/a=", "/api/runs", "/api/run?id=%FF"}) {
      INFO(target << " " << range);
      const std::string out =
          console.answer(fmt::format("GET {} HTTP/1.1\r\nHost: 127.0.0.1:0\r\nRange: {}\r\n\r\n", target, range));
      INFO(out);
      const Answer a = parse(out);
      CHECK(out.find("Content-Range:") == std::string::npos);
      CHECK(out.find("\r\nContent-Length: " + std::to_string(a.body.size()) + "\r\n") != std::string::npos);
      if (a.status >= 400) {
        CHECK(is_json_error(a));
      } else {
        CHECK(Json::parse(a.body, nullptr, false).is_object());
      }
    }
  }
}

// Found by the console fuzzer: httplib reads " HEAD /api/runs HTTP/1.1" (space first) as HEAD and
// answered a JSON error without its body. A request line is METHOD SP target SP version, single
// spaces, no tabs (RFC 9112 3); anything looser is a 400 with its JSON error, whatever its first word.
TEST_CASE("a request line with stray spaces or tabs is a 400 with a JSON error", "[pg][console]") {
  RunningEngine env;
  Console console(env.engine, {.listen = "127.0.0.1:0"});
  for (const auto* line :
       {" HEAD /api/runs HTTP/1.1", "HEAD  /api/runs HTTP/1.1", "HEAD /api/runs  HTTP/1.1", "HEAD /api/runs HTTP/1.1 ",
        "\tHEAD /api/runs HTTP/1.1", "GET\t/api/runs HTTP/1.1", " GET / HTTP/1.1", "HEAD /api/runs HTTP/1.1 extra"}) {
    INFO(line);
    const std::string out = console.answer(fmt::format("{}\r\nHost: 127.0.0.1:0\r\nRange: bytes=abc\r\n\r\n", line));
    INFO(out);
    const Answer a = parse(out);
    CHECK(a.status == 400);
    CHECK(is_json_error(a));
    CHECK(out.find("\r\nContent-Length: " + std::to_string(a.body.size()) + "\r\n") != std::string::npos);
    CHECK(out.find("X-Content-Type-Options: nosniff") != std::string::npos);
  }
  // The strict form is still served, HEAD without a body as HTTP says.
  CHECK(parse(console.answer("GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1:0\r\n\r\n")).status == 200);
  const std::string head = console.answer("HEAD /api/runs HTTP/1.1\r\nHost: 127.0.0.1:0\r\n\r\n");
  CHECK(parse(head).status == 200);
  CHECK(parse(head).body.empty());
}

// The management API parses the cursor (src/engine/runs.cpp) and refuses one out of range with
// InvalidArgument, which the console answers 400 (it was a 500, std::out_of_range, and a 503, 22008).
TEST_CASE("a cursor of 19 digits or past the time range is a 400", "[pg][console]") {
  RunningEngine env;
  Console console(env.engine, {.listen = "127.0.0.1:0"});
  console.start();
  for (const auto* us : {"9999999999999999999", "9223372036854775807"}) {
    INFO(us);
    const Answer a = exchange(
        console.port(), get(console, fmt::format("/api/runs?cursor={}.01890000-0000-7000-8000-000000000000", us)));
    CHECK(a.status == 400);
    CHECK(is_json_error(a));
  }
}
