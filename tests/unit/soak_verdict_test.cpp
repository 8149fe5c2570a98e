// The soak's checks (tests/soak/verdict.hpp) fail on what they look for: the soak itself is run
// by scripts/soak.sh and, for two minutes, by the test suite.
#include <catch2/catch.hpp>

#include "soak/verdict.hpp"

namespace {

using durable::soak::Sample;

// 12 samples 10 s apart, the warm-up the first 4: 8 intervals after it, thirds of 2. Flat: 9 MiB,
// 9 connections, 40 runs an interval.
std::vector<Sample> flat_samples() {
  std::vector<Sample> samples;
  for (int i = 1; i <= 12; ++i)
    samples.push_back({.at_s = 10.0 * i, .rss_kb = 9216, .connections = 9, .completed = 40});
  return samples;
}

const durable::soak::Limits soak_test_limits{.warmup_s = 40, .max_connections = 9, .max_drift = 0.10};

durable::soak::Outcome clean_outcome() {
  durable::soak::Outcome o;
  o.started = o.completed = 480;
  o.schedule_fires = 2;
  return o;
}

bool fails_with(const durable::soak::Verdict& v, const std::string& words) {
  for (const auto& f : v.failed) {
    if (f.find(words) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("the soak's verdict passes a flat run and fails each check it makes", "[unit][soak]") {
  auto v = durable::soak::judge(flat_samples(), soak_test_limits, clean_outcome());
  CHECK(v.ok());
  CHECK(v.figures["verdict"] == "ok");
  CHECK(v.figures["throughput_drift"] == 0.0);

  SECTION("memory that grows 6 % after the warm-up") {
    auto samples = flat_samples();
    samples.back().rss_kb = 9216 * 106 / 100;
    v = durable::soak::judge(samples, soak_test_limits, clean_outcome());
    CHECK(fails_with(v, "memory grew 6.0%: VmRSS 9216 kB at 40 s (warm-up end), 9768 kB at 120 s"));
  }
  SECTION("growth during the warm-up alone is no failure") {
    auto samples = flat_samples();
    samples.front().rss_kb = 4096;
    samples.front().connections = 3;
    CHECK(durable::soak::judge(samples, soak_test_limits, clean_outcome()).ok());
  }
  SECTION("a connection more at the end, or more than the pool at any time") {
    auto samples = flat_samples();
    samples.back().connections = 10;
    samples.back().opened = 1;
    v = durable::soak::judge(samples, soak_test_limits, clean_outcome());
    CHECK(fails_with(v,
                     "the worker opened 1 connection(s) after the warm-up: 9 at 40 s (warm-up end), 10 at 120 s, "
                     "0 slot(s) of its pool unopened"));
    CHECK(fails_with(v, "the worker held 10 connections at once; its pool and LISTEN session are 9"));
  }
  SECTION("connections broken and replaced after the warm-up, their count the same") {
    auto samples = flat_samples();
    samples[8].opened = 2;
    CHECK(fails_with(durable::soak::judge(samples, soak_test_limits, clean_outcome()), "opened 2 connection(s)"));
  }
  SECTION("a slot of the pool still unopened at the warm-up's end opens later") {
    auto samples = flat_samples();
    for (int i = 0; i < 8; ++i) samples[i].connections = 8;
    samples[8].opened = 1;
    CHECK(durable::soak::judge(samples, soak_test_limits, clean_outcome()).ok());
  }
  SECTION("throughput that falls by a fifth") {
    auto samples = flat_samples();
    samples[10].completed = samples[11].completed = 32;
    v = durable::soak::judge(samples, soak_test_limits, clean_outcome());
    CHECK(fails_with(v, "throughput drifted -20.0%: 40.0 runs per interval in the first third"));
  }
  SECTION("a wrong result, a run that did not end, a schedule that did not fire, a worker that crashed") {
    auto outcome = clean_outcome();
    outcome.completed = 470;
    outcome.failed = 1;
    outcome.failures = {"soak-chain-3: returned 7"};
    outcome.schedule_fires = 0;
    outcome.worker_exit = 134;
    v = durable::soak::judge(flat_samples(), soak_test_limits, outcome);
    CHECK(fails_with(v, "1 run(s) failed or gave a wrong result:\n    soak-chain-3: returned 7"));
    CHECK(fails_with(v, "9 of 480 run(s) started did not end"));
    CHECK(fails_with(v, "the schedule's runs: 0 completed, 0 failed; at least 1 expected"));
    CHECK(fails_with(v, "the worker exited with 134 after SIGTERM"));
  }
  SECTION("no sample after the warm-up") {
    auto samples = flat_samples();
    samples.resize(4);
    CHECK(fails_with(durable::soak::judge(samples, soak_test_limits, clean_outcome()), "none after it"));
  }
  SECTION("too few intervals after it to compare thirds") {
    auto samples = flat_samples();
    samples.resize(6);
    CHECK(fails_with(durable::soak::judge(samples, soak_test_limits, clean_outcome()), "too few to compare thirds"));
  }
}
