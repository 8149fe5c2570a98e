// RunEnds: the end of a run wakes the result() waiters of that run, not every waiter.
#include <catch2/catch.hpp>

#include <chrono>

#include "base/wake_signal.hpp"

using durable::detail::RunEnds;
using namespace std::chrono_literals;

TEST_CASE("a run's end wakes its own waiters, an end of no named run wakes all", "[unit][run_ends]") {
  RunEnds ends;
  auto a = ends.of("run-a");
  auto b = ends.of("run-b");
  CHECK(ends.of("run-a") == a);  // waiters of one run share its signal
  const auto seen_a = a->generation();
  const auto seen_b = b->generation();

  ends.ended("run-b");
  CHECK_FALSE(a->wait_for(seen_a, 0ms));  // another run's end: run-a's waiters sleep on
  CHECK(b->wait_for(seen_b, 0ms));

  ends.ended("run-c");  // nobody waits for it
  CHECK_FALSE(a->wait_for(seen_a, 0ms));

  const auto seen_b2 = b->generation();
  ends.ended("");  // an end that names no run (an earlier version's NOTIFY): everyone looks
  CHECK(a->wait_for(seen_a, 0ms));
  CHECK(b->wait_for(seen_b2, 0ms));
}

TEST_CASE("runs nobody waits for any more are forgotten", "[unit][run_ends]") {
  RunEnds ends;
  for (int i = 0; i < 10000; ++i) ends.of("run-" + std::to_string(i));  // each released at once
  auto held = ends.of("kept");
  const auto seen = held->generation();
  ends.ended("kept");
  CHECK(held->wait_for(seen, 0ms));
  CHECK(ends.waiting() < 200);  // swept as it grew, not 10,001 entries
}
