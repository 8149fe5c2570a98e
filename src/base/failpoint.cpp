#include "base/failpoint.hpp"

#include <stdexcept>
#include <string>

#ifdef DURABLE_FAILPOINTS
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <thread>

#include "base/log.hpp"
#endif

namespace durable::detail {

#ifndef DURABLE_FAILPOINTS

void configure_failpoints(std::string_view spec) {
  if (spec.empty()) return;  // nothing armed: the same as a build with failpoints
  throw std::logic_error("failpoints '" + std::string(spec) +
                         "' cannot be armed: this build of durable has no failpoints; configure it with "
                         "-DDURABLE_FAILPOINTS=ON (the default when DURABLE_TESTS is on)");
}

#else

namespace {

struct Failpoint {
  std::string name;
  bool kill = false;
  bool fail = false;
  long at_hit = 0;    // kill and fail: which hit acts (0: every hit for fail, the first for kill)
  long sleep_ms = 0;  // sleep: how long a hit waits
  long every = 1;     // sleep: on every Nth hit
  std::atomic<long> hits{0};
};

// An entry that does not parse is reported and ignored. A deque: entries hold atomics.
std::deque<Failpoint> parse(std::string_view spec_text) {
  std::deque<Failpoint> parsed;
  const std::string spec(spec_text);
  std::size_t begin = 0;
  while (begin < spec.size()) {
    std::size_t end = spec.find(',', begin);
    if (end == std::string::npos) end = spec.size();
    const std::string entry = spec.substr(begin, end - begin);
    begin = end + 1;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) {
      logger().error(
          "DURABLE_FAILPOINTS entry '{}' ignored: write name=kill, name=kill@N, name=sleep:MS, "
          "name=sleep:MS/N, name=fail or name=fail@N",
          entry);
      continue;
    }
    Failpoint& p = parsed.emplace_back();
    p.name = entry.substr(0, eq);
    const std::string action = entry.substr(eq + 1);
    if (action.rfind("kill", 0) == 0 || action.rfind("fail", 0) == 0) {
      (action[0] == 'k' ? p.kill : p.fail) = true;
      if (action.size() > 5 && action[4] == '@') p.at_hit = std::atol(action.c_str() + 5);
      if (p.kill && p.at_hit == 0) p.at_hit = 1;
    } else if (action.rfind("sleep:", 0) == 0) {
      p.sleep_ms = std::atol(action.c_str() + 6);
      if (auto slash = action.find('/'); slash != std::string::npos)
        p.every = std::max(1L, std::atol(action.c_str() + slash + 1));
    } else {
      logger().error(
          "DURABLE_FAILPOINTS action '{}' ignored: use kill, kill@N, sleep:MS, sleep:MS/N, fail or "
          "fail@N",
          action);
      parsed.pop_back();
    }
  }
  return parsed;
}

std::deque<Failpoint>& configured() {
  static std::deque<Failpoint> points = [] {
    const char* env = std::getenv("DURABLE_FAILPOINTS");
    return parse(env ? env : "");
  }();
  return points;
}

std::atomic<bool>& any_configured() {
  static std::atomic<bool> any{!configured().empty()};
  return any;
}

}  // namespace

void configure_failpoints(std::string_view spec) {
  std::deque<Failpoint>& points = configured();
  points.clear();  // not while failpoints are being hit: a test sets them before its engines run
  for (auto& p : parse(spec)) {
    Failpoint& q = points.emplace_back();
    q.name = p.name;
    q.kill = p.kill;
    q.fail = p.fail;
    q.at_hit = p.at_hit;
    q.sleep_ms = p.sleep_ms;
    q.every = p.every;
  }
  any_configured() = !points.empty();
}

bool failpoint(std::string_view name) {
  if (!any_configured().load(std::memory_order_relaxed)) return false;  // the shipped default
  bool fails = false;
  for (Failpoint& p : configured()) {
    if (p.name != name) continue;
    const long hit = ++p.hits;
    if (p.sleep_ms > 0 && hit % p.every == 0) std::this_thread::sleep_for(std::chrono::milliseconds{p.sleep_ms});
    if (p.kill && hit == p.at_hit) {
      logger().warn("failpoint {}: killing this process (hit {})", p.name, hit);
      logger().flush();
      raise(SIGKILL);
    }
    if (p.fail && (p.at_hit == 0 || hit == p.at_hit)) {
      logger().warn("failpoint {}: failing here (hit {})", p.name, hit);
      fails = true;
    }
  }
  return fails;
}

#endif  // DURABLE_FAILPOINTS

}  // namespace durable::detail
