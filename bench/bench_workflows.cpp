// The benchmark's workflow and engines (see bench_workflows.hpp).
#include "bench_workflows.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace bench {

void register_definitions(durable::Engine& engine) { engine.add<Noop>().add<NoopChain>(); }

durable::EngineOptions engine_options(const std::string& url, const std::string& schema) {
  durable::EngineOptions options;
  options.database_url = url;
  options.schema = schema;
  return options;
}

void check_sum(int sum, int steps) {
  if (sum != steps * (steps - 1) / 2) {
    throw std::runtime_error(
        fmt::format("a {}-step run returned {}, expected {}", steps, sum, steps * (steps - 1) / 2));
  }
}

void run_chain(durable::Engine& engine, const std::string& id, int steps) {
  check_sum(engine.start_workflow<NoopChain>(id, steps).result(result_timeout), steps);
}

StartedEngine::StartedEngine(const std::string& url) : schema(url), engine(engine_options(url, schema.name())) {
  register_definitions(engine);
  engine.start();
}

}  // namespace bench
