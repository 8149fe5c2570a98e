// libFuzzer target: the web console's request handling on raw bytes, as a client would send
// them: cpp-httplib's request parser, the console's checks (Host, token, CSRF, origin, UTF-8,
// sizes), its routes, its body reading and its error answers, through Console::answer (no socket).
//
// The engine's database is unreachable (a socket directory that does not exist, given up on
// at the first try), so every management API call throws DatabaseError, answered 503: this covers
// everything up to the management API call, not the API itself (tests/console runs the console
// against PostgreSQL). The token is "fuzz", and "{{csrf}}" in an input becomes the page's CSRF
// token, so that inputs get past the checks to the actions.
//
// Findings: a crash or sanitizer report, an answer that is not HTTP, a 500 (or any 5xx but 503),
// or an error answer whose JSON does not parse or has no one-line "error".
#include <console.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <durable/engine.hpp>
#include <string>
#include <string_view>

#include "fuzz_assert.hpp"

namespace {

using namespace std::chrono_literals;

struct Fixture {
  durable::Engine engine{
      {.database_url = "host=/nonexistent/durable-fuzz dbname=none port=1", .database_unavailable_after = 1ms}};
  durable::console::Console console{engine, {.listen = "127.0.0.1:0", .token = "fuzz"}};
  std::string csrf;
  Fixture() {
    const std::string page = console.answer("GET / HTTP/1.1\r\nHost: 127.0.0.1:0\r\n\r\n");
    const std::string marker = "name=\"durable-csrf\" content=\"";
    const auto at = page.find(marker);
    FUZZ_ASSERT(at != std::string::npos);
    csrf = page.substr(at + marker.size(), 64);
  }
};

// The status of the answer starting at `at`, or -1.
int status_at(const std::string& out, std::size_t at) {
  if (out.compare(at, 9, "HTTP/1.1 ") != 0 || out.size() < at + 12) return -1;
  int status = 0;
  for (std::size_t i = at + 9; i < at + 12; ++i) {
    if (out[i] < '0' || out[i] > '9') return -1;
    status = status * 10 + (out[i] - '0');
  }
  return status;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Fixture fixture;
  std::string request(reinterpret_cast<const char*>(data), size);
  for (auto at = request.find("{{csrf}}"); at != std::string::npos; at = request.find("{{csrf}}", at)) {
    request.replace(at, 8, fixture.csrf);
  }
  const std::string out = fixture.console.answer(request);
  // To read what a reproducer got: DURABLE_FUZZ_PRINT=1 build-fuzz/fuzz/durable_fuzz_console <input>
  static const bool print = std::getenv("DURABLE_FUZZ_PRINT") != nullptr;
  if (print) std::fwrite(out.data(), 1, out.size(), stderr);
  if (out.empty()) return 0;  // no request line: nothing to answer
  std::size_t start = 0;
  int status = status_at(out, 0);
  if (status == 100) {  // "Expect: 100-continue" first, then the answer
    start = out.find("\r\n\r\n") + 4;
    status = status_at(out, start);
  }
  FUZZ_ASSERT(status >= 200 && status < 600);
  FUZZ_ASSERT(status < 500 || status == 503);
  const auto head_end = out.find("\r\n\r\n", start);
  FUZZ_ASSERT(head_end != std::string::npos);
  const std::string_view head(out.data() + start, head_end - start);
  const bool json = head.find("Content-Type: application/json") != std::string_view::npos;
  // A Range header slices the body, an Accept-Encoding compresses it.
  const bool whole =
      head.find("Content-Range:") == std::string_view::npos && head.find("Content-Encoding:") == std::string_view::npos;
  // An answer to HEAD (the request line's first word, even when the rest does not parse) has no body.
  const bool has_body = out.size() > head_end + 4;
  FUZZ_ASSERT(has_body || !json || request.rfind("HEAD", 0) == 0);
  if (status >= 400 && json && whole && has_body) {
    const auto body = durable::Json::parse(out.substr(head_end + 4), nullptr, false);
    FUZZ_ASSERT(body.is_object() && body.contains("error") && body["error"].is_string());
    FUZZ_ASSERT(body["error"].get<std::string>().find('\n') == std::string::npos);
  }
  return 0;
}
