#include "failpoint.hpp"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <deque>

#include "log.hpp"

namespace durable::detail {

namespace {

struct Failpoint {
  std::string name;
  bool kill = false;
  long at_hit = 1;    // kill: which hit kills
  long sleep_ms = 0;  // sleep: how long a hit waits
  long every = 1;     // sleep: on every Nth hit
  std::atomic<long> hits{0};
};

// Parsed once; an entry that does not parse is reported and ignored. A deque: entries hold atomics.
std::deque<Failpoint>& configured() {
  static std::deque<Failpoint> points = [] {
    std::deque<Failpoint> parsed;
    const char* env = std::getenv("DURABLE_FAILPOINTS");
    std::string spec = env ? env : "";
    std::size_t begin = 0;
    while (begin < spec.size()) {
      std::size_t end = spec.find(',', begin);
      if (end == std::string::npos) end = spec.size();
      const std::string entry = spec.substr(begin, end - begin);
      begin = end + 1;
      const auto eq = entry.find('=');
      if (eq == std::string::npos) {
        logger().error("DURABLE_FAILPOINTS entry '{}' ignored: write name=kill, name=kill@N, name=sleep:MS or name=sleep:MS/N", entry);
        continue;
      }
      Failpoint& p = parsed.emplace_back();
      p.name = entry.substr(0, eq);
      const std::string action = entry.substr(eq + 1);
      if (action.rfind("kill", 0) == 0) {
        p.kill = true;
        if (action.size() > 5 && action[4] == '@') p.at_hit = std::atol(action.c_str() + 5);
      } else if (action.rfind("sleep:", 0) == 0) {
        p.sleep_ms = std::atol(action.c_str() + 6);
        if (auto slash = action.find('/'); slash != std::string::npos) p.every = std::max(1L, std::atol(action.c_str() + slash + 1));
      } else {
        logger().error("DURABLE_FAILPOINTS action '{}' ignored: use kill, kill@N, sleep:MS or sleep:MS/N", action);
        parsed.pop_back();
      }
    }
    return parsed;
  }();
  return points;
}

}  // namespace

void failpoint(std::string_view name) {
  static const bool any = !configured().empty();
  if (!any) return;  // the shipped default: one branch on a constant
  for (Failpoint& p : configured()) {
    if (p.name != name) continue;
    const long hit = ++p.hits;
    if (p.sleep_ms > 0 && hit % p.every == 0) std::this_thread::sleep_for(std::chrono::milliseconds{p.sleep_ms});
    if (p.kill && hit == p.at_hit) {
      logger().warn("failpoint {}: killing this process (hit {})", p.name, hit);
      logger().flush();
      raise(SIGKILL);
    }
  }
}

}  // namespace durable::detail
