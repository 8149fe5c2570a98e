// A worker process for the fault-injection suite:
//   durable_fault_worker SCHEMA INSTANCE
// runs an engine with the fault workload on $DURABLE_DATABASE_URL until SIGTERM (or until a
// test kills it). $DURABLE_FAILPOINTS, when set, arms the library's failpoints in it.
// $DURABLE_FAULT_START=PREFIX:COUNT makes it start COUNT three-step runs PREFIX0.. itself once
// started (their first replays commit with their starts, here).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fault/workload.hpp"
#include "support/serve.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SCHEMA INSTANCE\n", argv[0]);
    return 2;
  }
  const char* env_url = std::getenv("DURABLE_DATABASE_URL");
  const std::string url = env_url ? env_url : "";
  const std::string schema = argv[1];
  const char* env_start = std::getenv("DURABLE_FAULT_START");
  const std::string start = env_start ? env_start : "";
  return durable::test::serve_until_stopped(
      durable::fault::workload_options(url, schema, argv[2]),
      [&](durable::Engine& engine) { durable::fault::register_workload(engine, url, schema); }, "fault worker",
      [&](durable::Engine& engine) {
        if (start.empty()) return;
        const auto colon = start.rfind(':');
        durable::fault::start_workflows(engine, start.substr(0, colon), std::stoi(start.substr(colon + 1)),
                                        durable::fault::FlowInput{3, 0});
      });
}
