// The activity thread pool on its own: slots, idleness and shutdown, from many threads at once
// (this file runs under ThreadSanitizer in CI).
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "pipeline/thread_pool.hpp"

using namespace std::chrono_literals;
using durable::detail::ThreadPool;

TEST_CASE("the pool runs every job, never more at once than its size, and reports free slots", "[thread_pool]") {
  std::atomic<int> freed{0}, running{0}, most{0}, done{0};
  ThreadPool pool(4, [&] { ++freed; });
  CHECK(pool.free_slots() == 4);
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        pool.submit([&] {
          const int now = ++running;
          for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
          }
          std::this_thread::sleep_for(100us);
          --running;
          ++done;
        });
      }
    });
  }
  for (auto& t : submitters) t.join();
  REQUIRE(pool.wait_idle(30s));
  CHECK(done == 200);
  // The slot-freed hook runs after a job's slot is given back, so it may trail wait_idle().
  for (int i = 0; i < 3000 && freed < 200; ++i) std::this_thread::sleep_for(1ms);
  CHECK(freed == 200);
  CHECK(most <= 4);
  CHECK(pool.free_slots() == 4);
}

TEST_CASE("shutdown runs what is queued, then joins", "[thread_pool]") {
  std::atomic<int> done{0};
  {
    ThreadPool pool(2, [] {});
    for (int i = 0; i < 20; ++i)
      pool.submit([&] {
        std::this_thread::sleep_for(1ms);
        ++done;
      });
    CHECK(pool.busy() > 0);
    pool.shutdown();
    CHECK(done == 20);
  }
  CHECK(done == 20);
}

TEST_CASE("wait_idle gives up while a job still runs", "[thread_pool]") {
  std::atomic<bool> release{false};
  ThreadPool pool(1, [] {});
  pool.submit([&] {
    while (!release) std::this_thread::sleep_for(1ms);
  });
  CHECK_FALSE(pool.wait_idle(50ms));
  CHECK(pool.free_slots() == 0);
  release = true;
  CHECK(pool.wait_idle(30s));
}
