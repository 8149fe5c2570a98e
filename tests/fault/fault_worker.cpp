// A worker process for the fault-injection suite:
//   durable_fault_worker SCHEMA INSTANCE
// runs an engine with the fault workload on $DURABLE_DATABASE_URL until SIGTERM (or until a
// test kills it). $DURABLE_FAILPOINTS, when set, arms the library's failpoints in it.
#include <signal.h>

#include <cstdio>

#include "fault/workload.hpp"
#include "support/process.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SCHEMA INSTANCE\n", argv[0]);
    return 2;
  }
  sigset_t stop_signals = durable::test::block_stop_signals();
  try {
    const char* url = std::getenv("DURABLE_DATABASE_URL");
    durable::Engine engine(durable::fault::workload_options(url ? url : "", argv[1], argv[2]));
    durable::fault::register_workload(engine, url ? url : "", argv[1]);
    engine.start();
    std::printf("ready\n");
    std::fflush(stdout);
    int signal = 0;
    sigwait(&stop_signals, &signal);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault worker failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
