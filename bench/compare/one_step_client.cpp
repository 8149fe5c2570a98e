// One-step runs started and awaited by the service that runs them, as an embedded engine is used:
// idle (one run at a time), then from N client threads that each start a run and wait for its
// result, again and again. It uses only the public API that durable has had since its first
// benchmark, so the same source builds against an older durable and the two are measured side by
// side (docs/benchmarks.md, "A start that runs its first step"):
//   durable-one-step-client [RUNS [IN_FLIGHT [IDLE_RUNS]]]       (defaults: 2000 10 200)
// PostgreSQL: $DURABLE_DATABASE_URL. Works in a fresh schema that it drops at the end. Prints one
// JSON line: the clients' runs/s and each phase's start-to-result p50 and p99 in ms.
#include <unistd.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Noop {
  static constexpr auto name = "noop";
  int operator()(durable::ActivityContext&, const int& value) const { return value; }
};

struct OneStep {
  static constexpr auto name = "one_step";
  int operator()(durable::WorkflowContext& ctx, const int& value) { return ctx.call<Noop>(value); }
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Starts run `id` and waits for its result; returns the time that took in ms.
double run_one(durable::Engine& engine, const std::string& id, int value) {
  const auto start = Clock::now();
  if (engine.start_workflow<OneStep>(id, value).result(std::chrono::seconds{60}) != value) {
    std::fprintf(stderr, "run %s returned a wrong result\n", id.c_str());
    std::exit(1);
  }
  return ms_since(start);
}

double percentile(std::vector<double> ms, double p) {
  std::sort(ms.begin(), ms.end());
  return ms[std::min(ms.size() - 1, static_cast<std::size_t>(p * static_cast<double>(ms.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int in_flight = argc > 2 ? std::atoi(argv[2]) : 10;
  const int idle_runs = argc > 3 ? std::atoi(argv[3]) : 200;
  const char* env_url = std::getenv("DURABLE_DATABASE_URL");
  if (!env_url || runs < in_flight || in_flight < 1 || idle_runs < 1) {
    std::fprintf(stderr, "usage: DURABLE_DATABASE_URL=... %s [RUNS [IN_FLIGHT [IDLE_RUNS]]]\n", argv[0]);
    return 2;
  }
  durable::EngineOptions options;  // the defaults but the schema: what a user gets
  options.database_url = env_url;
  options.schema = "one_step_client_" + std::to_string(::getpid());
  std::vector<double> idle, loaded;
  double seconds = 0;
  {
    durable::Engine engine(options);
    engine.add<Noop>().add<OneStep>();
    engine.start();
    for (int i = 0; i < 20; ++i) run_one(engine, "warm-" + std::to_string(i), i);
    for (int i = 0; i < idle_runs; ++i) idle.push_back(run_one(engine, "idle-" + std::to_string(i), i));
    std::atomic<int> next{0};
    std::mutex mutex;
    const auto start = Clock::now();
    std::vector<std::thread> clients;
    clients.reserve(static_cast<std::size_t>(in_flight));
    for (int c = 0; c < in_flight; ++c) {
      clients.emplace_back([&] {
        for (int i = next++; i < runs; i = next++) {
          const double ms = run_one(engine, "run-" + std::to_string(i), i);
          const std::lock_guard lock(mutex);
          loaded.push_back(ms);
        }
      });
    }
    for (auto& client : clients) client.join();
    seconds = ms_since(start) / 1000;
  }
  durable::testing::drop_schema(options.database_url, options.schema);
  std::printf(
      "{\"runs\": %d, \"in_flight\": %d, \"seconds\": %.3f, \"runs_per_s\": %.1f, \"p50_ms\": %.2f, \"p99_ms\": %.2f, "
      "\"idle_runs\": %d, \"idle_p50_ms\": %.2f, \"idle_p99_ms\": %.2f}\n",
      runs, in_flight, seconds, runs / seconds, percentile(loaded, 0.5), percentile(loaded, 0.99), idle_runs,
      percentile(idle, 0.5), percentile(idle, 0.99));
  return 0;
}
