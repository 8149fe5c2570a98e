// Transactional activities: a 10-step chain whose steps each insert one row in the step's own
// transaction, against the same chain of no-op steps, and against ordinary activities that make
// the same insert on connections of their own (at least once), side by side in one run.
#include <fmt/format.h>

#include <array>

#include "bench_workflows.hpp"
#include "measurements.hpp"

namespace bench {

Result measure_transactional(const std::string& url, int workflows) {
  constexpr int steps = 10;
  constexpr int rounds = 2;
  progress(
      "transactional: {} x {}-step workflows of no-ops, transactional inserts and plain inserts, in turns, on 1 "
      "process, {} rounds",
      workflows, steps, rounds);
  const std::array<const char*, 3> chains = {NoopChain::name, InsertChain::name, InsertAloneChain::name};
  std::array<double, 3> seconds{};
  std::array<Result, 3> last;  // each kind's last run, for its PostgreSQL cost per step
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t kind = 0; kind < chains.size(); ++kind) {
      ScratchSchema schema(url);
      migrate(url, schema.name());
      create_bench_rows(url, schema.name());
      last[kind] = run_throughput(url, schema.name(), steps, 1, workflows, Starts::queued_first, "", chains[kind]);
      seconds[kind] += last[kind]["seconds"].get<double>();
      pqxx::connection conn(url);
      const auto rows = pqxx::nontransaction(conn)
                            .exec1("SELECT count(*) FROM \"" + schema.name() + "\".bench_rows")[0]
                            .as<long long>();
      if (rows != (kind == 0 ? 0 : static_cast<long long>(workflows) * steps)) {
        throw std::runtime_error(
            fmt::format("{}: {} rows inserted for {} steps", chains[kind], rows, workflows * steps));
      }
    }
  }
  auto steps_per_s = [&](std::size_t kind) { return 1.0 * rounds * workflows * steps / seconds[kind]; };
  const double ratio = steps_per_s(1) / steps_per_s(0);
  Result result = {{"bench", "transactional"},
                   {"steps", steps},
                   {"workflows", workflows},
                   {"rounds", rounds},
                   {"noop_steps_per_s", steps_per_s(0)},
                   {"insert_steps_per_s", steps_per_s(1)},
                   {"plain_insert_steps_per_s", steps_per_s(2)},
                   {"ratio", ratio},
                   {"ratio_to_plain_insert", steps_per_s(1) / steps_per_s(2)},
                   {"aim_ratio", aim_transactional_ratio},
                   {"aim_met", ratio >= aim_transactional_ratio}};
  const std::array<const char*, 3> kinds = {"noop", "insert", "plain_insert"};
  for (std::size_t kind = 0; kind < kinds.size(); ++kind) {
    for (const char* cost : {"pg_cpu_us_per_step", "wal_bytes_per_step", "write_xacts_per_step"}) {
      result[fmt::format("{}_{}", kinds[kind], cost)] = last[kind][cost];
    }
  }
  return result;
}

}  // namespace bench
