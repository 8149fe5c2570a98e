// The benchmark's workflow, a chain of no-op activity calls, and the engines that run it.
#pragma once

#include <durable/durable.hpp>

#include <chrono>
#include <string>

#include "support.hpp"

namespace bench {

struct Noop {
  static constexpr auto name = "noop";
  int operator()(durable::ActivityContext&, const int& value) const { return value; }
};

// Calls Noop `steps` times in sequence and sums the answers (so a run can be checked).
struct NoopChain {
  static constexpr auto name = "noop_chain";
  int operator()(durable::WorkflowContext& ctx, const int& steps) {
    int sum = 0;
    for (int i = 0; i < steps; ++i) sum += ctx.call<Noop>(i);
    return sum;
  }
};

using ChainHandle = durable::WorkflowHandle<int>;

void register_definitions(durable::Engine& engine);

// Default options but the schema, so every measurement runs what a user gets out of the box.
durable::EngineOptions engine_options(const std::string& url, const std::string& schema);

inline constexpr auto result_timeout = std::chrono::minutes{10};

// A wrong sum means the run is broken, not fast.
void check_sum(int sum, int steps);

// Starts a chain run and waits for its result.
void run_chain(durable::Engine& engine, const std::string& id, int steps);

// An in-process engine on a fresh schema, started: latency is judged where the result is
// noticed at once (no polling client between).
struct StartedEngine {
  explicit StartedEngine(const std::string& url);
  ScratchSchema schema;  // declared first: dropped after the engine has stopped
  durable::Engine engine;
};

}  // namespace bench
