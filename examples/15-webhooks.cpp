// Webhooks: a service that takes webhook deliveries and calls a downstream API that allows five
// calls a second. The calls wait on an activity queue that holds them to that rate, however many
// engines run them; a delivery that comes twice (senders retry) starts one run, by its
// deduplication key; an operator pauses the API's calls during an incident; and a burst of edits
// to one document starts one reindex, debounced, with the last edit's input.
//
// Run: build/examples/15-webhooks   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <optional>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

// [activity-queue]
struct CallApi {  // the downstream API: five calls a second at most
  static constexpr auto name = "call_api";
  // Every call waits on queue "api-calls", whose rate every engine's claims obey together.
  static durable::ActivityOptions options() { return {.queue = "api-calls"}; }
  std::string operator()(durable::ActivityContext&, const std::string& event) const { return "sent " + event; }
};
// [activity-queue]

struct Deliver {
  static constexpr auto name = "deliver";
  std::string operator()(durable::WorkflowContext& ctx, const std::string& event) { return ctx.call<CallApi>(event); }
};

struct Reindex {
  static constexpr auto name = "reindex";
  std::string operator()(durable::WorkflowContext&, const std::string& version) { return "indexed " + version; }
};

int main() {
  const std::string url = durable::testing::database_url();
  const std::string schema = "durable_example_webhooks";
  durable::testing::drop_schema(url, schema);
  // This process runs at most two of the API's calls at once, whatever the queue's rate leaves.
  durable::Engine engine({.database_url = url, .schema = schema, .queue_activity_concurrency = {{"api-calls", 2}}});
  engine.add<CallApi>().add<Deliver>().add<Reindex>();
  // [rate]
  durable::QueueSpec api;
  api.name = "api-calls";
  api.rate = durable::RateLimit{.count = 5, .period = 1s};  // any one second: five calls, all engines together
  engine.add_queue(api);
  engine.add_queue({.name = "deliveries"});  // no limits: a named queue for the deduplication keys
  engine.add_queue({.name = "indexing"});
  // [rate]
  engine.start();

  // Twelve deliveries, one of them twice: eleven runs, whose calls go five a second.
  const auto began = std::chrono::steady_clock::now();
  std::vector<durable::WorkflowHandle<std::string>> runs;
  int duplicates = 0;
  for (int i = 0; i < 12; ++i) {
    const std::string event = fmt::format("evt-{}", i == 11 ? 3 : i);  // the sender retried evt-3
    // [dedup]
    durable::StartOptions options;
    options.queue = "deliveries";
    options.deduplication_key = event;  // while a run with this key is queued or running, no other starts
    auto outcome = engine.start_or_find<Deliver>(fmt::format("delivery-{}", i), event, options);
    // [dedup]
    if (outcome.started) runs.push_back(outcome.run);
    duplicates += outcome.started ? 0 : 1;
  }
  for (const auto& run : runs) run.result(30s);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  fmt::print("{} deliveries ran ({} duplicate), in {:.1f} s at five a second\n", runs.size(), duplicates, seconds);

  // [pause-activity]
  // An incident: the API fails. Its calls stop, on every engine, until an operator lets them go.
  engine.queues().pause_activity(CallApi::name, {.actor = "ana", .reason = "the API answers 503"});
  auto held = engine.start_workflow<Deliver>("delivery-held", std::string("evt-held"));
  std::this_thread::sleep_for(300ms);
  const bool waited = held.status() == durable::WorkflowStatus::running;  // its call waits, not failed
  engine.queues().resume_activity(CallApi::name, {.actor = "ana", .reason = "the API is back"});
  // [pause-activity]
  const std::string after = held.result(10s);
  fmt::print("a delivery during the pause waited ({}), then: {}\n", waited ? "yes" : "no", after);

  // A burst of five edits to one document: one reindex, 300 ms after the last, of the last version.
  std::optional<durable::WorkflowHandle<std::string>> reindex;
  for (int version = 1; version <= 5; ++version) {
    // [debounce]
    durable::StartOptions options;
    options.queue = "indexing";
    options.debounce_key = "doc-42";
    options.debounce = 300ms;  // admitted once 300 ms pass without another start with the key
    reindex = engine.start_workflow<Reindex>(fmt::format("reindex-doc-42-v{}", version), fmt::format("v{}", version),
                                             options);  // every start returns the one run
    // [debounce]
    std::this_thread::sleep_for(50ms);
  }
  const std::string indexed = reindex->result(30s);
  fmt::print("one reindex ran, as run '{}': {}\n", reindex->id().str(), indexed);

  engine.stop();
  durable::testing::drop_schema(url, schema);
  const bool ok = runs.size() == 11 && duplicates == 1 && seconds >= 2.0 && indexed == "indexed v5" && waited &&
                  after == "sent evt-held" && reindex->id().str() == "reindex-doc-42-v1";
  return ok ? 0 : 1;
}
