// The misfire policies as arithmetic on fire times, without a database.
#include <date/date.h>
#include <catch2/catch.hpp>

#include "schedule/fire_plan.hpp"

using namespace std::chrono_literals;
using durable::CronCalendar;
using durable::CronExpression;
using durable::MisfirePolicy;
using durable::detail::plan_fires;
using durable::detail::TimePoint;

namespace {

TimePoint jan10(std::chrono::minutes since_midnight) {
  return TimePoint{date::sys_days{date::year{2027} / 1 / 10}} + since_midnight;
}

const CronCalendar hourly(CronExpression::parse("0 * * * *"), "UTC");

// The schedule waits for 11:00 (after 10:00); the clock reads `now`.
durable::detail::FirePlan plan(MisfirePolicy policy, TimePoint now, int limit = 10) {
  return plan_fires(hourly, policy, limit, 60s, jan10(11h), jan10(10h), now);
}

std::vector<int> hours_of(const durable::detail::FirePlan& p) {
  std::vector<int> hours;
  for (const auto& f : p.starts) hours.push_back(static_cast<int>((f.nominal - jan10(0min)) / 1h));
  return hours;
}

}  // namespace

TEST_CASE("nothing is due before the next fire time", "[fire_plan]") {
  auto p = plan(MisfirePolicy::catchup, jan10(10h + 59min));
  CHECK(p.starts.empty());
  CHECK(p.dropped == 0);
  CHECK(p.next_fire == jan10(11h));
  CHECK(p.prev_fire == jan10(10h));
}

TEST_CASE("a fire within the grace period is on time under every policy", "[fire_plan]") {
  auto policy = GENERATE(MisfirePolicy::skip, MisfirePolicy::catchup, MisfirePolicy::compress);
  for (auto late : {0s, 30s, 60s}) {
    auto p = plan(policy, jan10(11h) + late);
    REQUIRE(p.starts.size() == 1);
    CHECK(p.starts[0].nominal == jan10(11h));
    CHECK(p.starts[0].window_start == jan10(10h));
    CHECK(p.starts[0].fires == 1);
    CHECK(p.next_fire == jan10(12h));
    CHECK(p.prev_fire == jan10(11h));
  }
  CHECK(plan(policy, jan10(11h) + 61s).starts.size() == (policy == MisfirePolicy::skip ? 0u : 1u));
}

TEST_CASE("ten missed hourly ticks under each policy", "[fire_plan]") {
  const TimePoint now = jan10(20h + 30min);  // 11:00 .. 20:00 passed, the last 30 minutes ago
  SECTION("skip drops them all") {
    auto p = plan(MisfirePolicy::skip, now);
    CHECK(p.starts.empty());
    CHECK(p.dropped == 10);
  }
  SECTION("catchup starts them oldest first, up to the limit") {
    auto p = plan(MisfirePolicy::catchup, now);
    CHECK(hours_of(p) == std::vector<int>{11, 12, 13, 14, 15, 16, 17, 18, 19, 20});
    CHECK(p.dropped == 0);
    CHECK(p.starts[0].window_start == jan10(10h));
    CHECK(p.starts[9].window_start == jan10(19h));
    auto limited = plan(MisfirePolicy::catchup, now, 3);
    CHECK(hours_of(limited) == std::vector<int>{18, 19, 20});
    CHECK(limited.dropped == 7);
    CHECK(limited.starts[0].window_start == jan10(17h));
    CHECK(plan(MisfirePolicy::catchup, now, 0).dropped == 10);
  }
  SECTION("compress starts one run standing for all of them") {
    auto p = plan(MisfirePolicy::compress, now);
    REQUIRE(p.starts.size() == 1);
    CHECK(p.starts[0].nominal == jan10(20h));
    CHECK(p.starts[0].window_start == jan10(10h));
    CHECK(p.starts[0].fires == 10);
    CHECK(p.dropped == 0);
  }
  auto p = plan(MisfirePolicy::skip, now);
  CHECK(p.next_fire == jan10(21h));
  CHECK(p.prev_fire == jan10(20h));
}

TEST_CASE("missed fires and an on-time one: the policy applies to the missed ones only", "[fire_plan]") {
  const TimePoint now = jan10(14h) + 10s;  // 11, 12, 13 missed; 14 is on time
  CHECK(hours_of(plan(MisfirePolicy::skip, now)) == std::vector<int>{14});
  CHECK(hours_of(plan(MisfirePolicy::catchup, now, 2)) == std::vector<int>{12, 13, 14});
  auto compressed = plan(MisfirePolicy::compress, now);
  CHECK(hours_of(compressed) == std::vector<int>{13, 14});
  CHECK(compressed.starts[0].fires == 3);
  CHECK(compressed.starts[1].fires == 1);
  CHECK(compressed.starts[1].window_start == jan10(13h));
}

TEST_CASE("a long backlog is handled in bounded passes", "[fire_plan]") {
  auto p = plan_fires(hourly, MisfirePolicy::skip, 10, 60s, jan10(11h), jan10(10h), jan10(11h) + 24h * 30, 100);
  CHECK(p.dropped == 100);
  CHECK(p.next_fire == jan10(11h) + 100h);  // still due: the next pass goes on from here
}
