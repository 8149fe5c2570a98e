// durable's log lines: one message, one line, whatever the values in it hold.
#include <catch2/catch.hpp>

#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "base/log.hpp"

TEST_CASE("a newline or escape in a logged value stays on its line, escaped", "[unit][log]") {
  spdlog::logger& log = durable::detail::logger();
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_pattern("%l %v");
  log.sinks().push_back(sink);
  const auto level = log.level();
  log.set_level(spdlog::level::info);
  log.info("run {} resumed by '{}': {}", "r1", "ops", "fixed\n[error] forged line\x1b[2J");
  log.info("plain");
  log.set_level(level);
  log.sinks().pop_back();
  CHECK(out.str() == "info run r1 resumed by 'ops': fixed\\x0a[error] forged line\\x1b[2J\ninfo plain\n");
}
