// A worker process for the crash and multi-process tests:
//   durable_test_worker SCHEMA serve     run an engine with every test definition until SIGTERM
//   durable_test_worker SCHEMA migrate   bring the schema up to date and exit
//   durable_test_worker SCHEMA race ID N OUT
//                                        N threads start workflow ID at once; writes
//                                        "<started> <duplicates>" to OUT
// The database is $DURABLE_DATABASE_URL.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "support/saga_workflows.hpp"
#include "support/serve.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 6 && std::strcmp(argv[2], "race") == 0)) {
    std::fprintf(stderr, "usage: %s SCHEMA serve|migrate|race ID N OUT\n", argv[0]);
    return 2;
  }
  durable::EngineOptions options;
  options.schema = argv[1];
  options.poll_interval = std::chrono::milliseconds{200};
  options.instance = std::string("worker-") + argv[2];
  // A named queue to serve besides the default one (the queue tests' processes).
  if (const char* queue = std::getenv("DURABLE_TEST_QUEUES"); queue && *queue) options.queues = {"default", queue};
  // Retention and a lease margin (the clock-skew tests), in milliseconds.
  if (const char* ms = std::getenv("DURABLE_TEST_RETENTION_MS"); ms && *ms) {
    options.retention = std::chrono::milliseconds{std::atoll(ms)};
  }
  if (const char* ms = std::getenv("DURABLE_TEST_LEASE_MARGIN_MS"); ms && *ms) {
    options.lease_margin = std::chrono::milliseconds{std::atoll(ms)};
  }
  durable::test::through_test_pooler(options);  // the test's PgBouncer, when it has one
  const bool migrate = std::strcmp(argv[2], "migrate") == 0;
  if (!migrate && std::strcmp(argv[2], "race") != 0) {
    auto register_definitions = [](durable::Engine& engine) {
      durable::test::register_all(engine);
      durable::test::register_sagas(engine);
    };
    return durable::test::serve_until_stopped(options, register_definitions, "worker");
  }
  try {
    durable::Engine engine(options);
    if (migrate) {
      engine.workflow("does-not-exist");
    } else {
      durable::test::register_all(engine);
      const std::string id = argv[3];
      const int threads = std::atoi(argv[4]);
      std::atomic<int> started{0}, duplicates{0}, ready{0};
      std::vector<std::thread> racers;
      for (int i = 0; i < threads; ++i) {
        racers.emplace_back([&] {
          ++ready;
          while (ready < threads) std::this_thread::yield();  // all threads go at once
          try {
            engine.start_workflow<durable::test::HelloWorkflow>(id, "race");
            ++started;
          } catch (const durable::WorkflowAlreadyStarted&) {
            ++duplicates;
          }
        });
      }
      for (auto& t : racers) t.join();
      std::ofstream(argv[5]) << started << " " << duplicates << "\n";
    }
  } catch (const durable::WorkflowNotFound&) {
    return 0;  // migrate mode: the schema is there, the lookup found nothing, as expected
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
