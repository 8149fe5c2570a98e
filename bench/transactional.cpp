// Transactional activities: a 10-step chain whose steps each insert one row in the step's own
// transaction, against the same chain of no-op steps, side by side in one run.
#include <fmt/format.h>

#include "bench_workflows.hpp"
#include "measurements.hpp"

namespace bench {

Result measure_transactional(const std::string& url, int workflows) {
  constexpr int steps = 10;
  progress("transactional: {} x {}-step workflows of inserts and of no-ops, in turns, on 1 process", workflows, steps);
  double seconds[2] = {0, 0};  // no-op, insert
  for (int round = 0; round < 2; ++round) {
    for (int kind = 0; kind < 2; ++kind) {
      ScratchSchema schema(url);
      migrate(url, schema.name());
      create_bench_rows(url, schema.name());
      const Result r = run_throughput(url, schema.name(), steps, 1, workflows, Starts::queued_first, "",
                                      kind == 0 ? NoopChain::name : InsertChain::name);
      seconds[kind] += r["seconds"].get<double>();
      if (kind == 1) {
        pqxx::connection conn(url);
        const auto rows = pqxx::nontransaction(conn)
                              .exec1("SELECT count(*) FROM \"" + schema.name() + "\".bench_rows")[0]
                              .as<long long>();
        if (rows != static_cast<long long>(workflows) * steps) {
          throw std::runtime_error(fmt::format("{} rows inserted, expected {}", rows, workflows * steps));
        }
      }
    }
  }
  const double noop_steps_per_s = 2.0 * workflows * steps / seconds[0];
  const double insert_steps_per_s = 2.0 * workflows * steps / seconds[1];
  const double ratio = insert_steps_per_s / noop_steps_per_s;
  return {{"bench", "transactional"},
          {"steps", steps},
          {"workflows", workflows},
          {"rounds", 2},
          {"noop_steps_per_s", noop_steps_per_s},
          {"insert_steps_per_s", insert_steps_per_s},
          {"ratio", ratio},
          {"aim_ratio", aim_transactional_ratio},
          {"aim_met", ratio >= aim_transactional_ratio}};
}

}  // namespace bench
