// durable-bench: durable against a hand-written job queue on the same PostgreSQL, then its
// throughput, latency (idle and under load), throughput with big tables, replay cost, the WAL
// and write transactions it costs PostgreSQL per step, and the management API with a million
// runs in the tables.
//
//   durable-bench [--scale F] [--only raw_queue|throughput|latency|scaling|replay|runs|messages|children|continue|
//                                     transactional|codec|flow|pooler]
//
// codec is measured only in a build that found libsodium (its SodiumCodec is the example's).
//
// The database is durable::testing::database_url(): $DURABLE_DATABASE_URL, or a throwaway
// cluster. Every measurement works in a fresh schema and drops it afterwards. Results go to
// stdout as one JSON line per measurement, then a table with the aims; progress goes to stderr.
//
// The raw queue runs first: engine throughput is reported as a ratio to its jobs/s, so
// `--only throughput` runs it too.
//
// The throughput, scaling and runs measurements re-execute this program as `durable-bench worker
// SCHEMA`: an engine process that serves the benchmark definitions until SIGTERM.
//
// The command line is options.cpp, the order of the measurements run_order.cpp, the table
// report.cpp. Each measurement is a file of its own (measurements.hpp); what they share is in
// support.hpp, pg_cost.hpp and bench_workflows.hpp.
#include <fmt/format.h>
#include <durable/testing.hpp>

#include <string>
#include <vector>

#include "bench_workflows.hpp"
#include "options.hpp"
#include "report.hpp"
#include "run_order.hpp"
#include "support/serve.hpp"

int main(int argc, char** argv) {
  using namespace bench;
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "worker") {
      // How WorkerProcesses starts engines: serve the benchmark definitions until SIGTERM.
      return durable::test::serve_until_stopped(engine_options(durable::testing::database_url(), args[1]),
                                                register_definitions, "durable-bench");
    }
    print_table(run_measurements(parse_args(args)));
    return 0;
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}\n{}\n", e.what(), usage());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "durable-bench failed: {}\n", e.what());
    return 1;
  }
}
