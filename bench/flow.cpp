// Flow control (issue 37): a tenant's runs behind another tenant's backlog on one queue, and the
// cost of admission with a backlog spread over many keys, each against the same work without it.
#include <fmt/format.h>

#include <functional>
#include <future>
#include <vector>

#include "bench_workflows.hpp"
#include "measurements.hpp"

namespace bench {

namespace {

constexpr const char* flow_queue = "flow";

// What start `i` of a batch is: its workflow id and where it waits.
using StartOf = std::function<std::pair<std::string, durable::StartOptions>(int i)>;

// `count` one-step NoopChain runs started from as many threads as the client has connections.
std::vector<ChainHandle> start_many(durable::Engine& client, int count, const StartOf& start_of) {
  const int threads = client.options().connection_pool_size;
  std::vector<std::future<std::vector<ChainHandle>>> parts;
  parts.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    parts.push_back(std::async(std::launch::async, [&, t] {
      std::vector<ChainHandle> mine;
      for (int i = t; i < count; i += threads) {
        const auto [id, options] = start_of(i);
        mine.push_back(client.start_workflow<NoopChain>(id, 1, options));
      }
      return mine;
    }));
  }
  std::vector<ChainHandle> runs;
  for (auto& part : parts) {
    for (auto& run : part.get()) runs.push_back(std::move(run));
  }
  return runs;
}

durable::StartOptions on_flow_queue(const std::string& key) {
  durable::StartOptions options;
  options.queue = flow_queue;
  options.concurrency_key = key;
  return options;
}

// An engine with the benchmark's definitions that serves the flow queue (no limits: the turns
// alone are measured), started; and a client on the same schema that is never started.
struct FlowEngines {
  explicit FlowEngines(const std::string& url) : schema(url), client(engine_options(url, schema.name())) {
    register_definitions(client);
    client.queues().define({flow_queue, std::nullopt, std::nullopt});
  }
  void start_engine() {
    durable::EngineOptions options = engine_options(schema.url(), schema.name());
    options.queues = {"default", flow_queue};
    engine.emplace(options);
    register_definitions(*engine);
    engine->start();
  }
  ScratchSchema schema;  // declared first: dropped after the engines have stopped
  durable::Engine client;
  std::optional<durable::Engine> engine;
};

void wait_for(const std::vector<ChainHandle>& runs) {
  for (const auto& run : runs) check_sum(run.result(result_timeout), 1);
}

// Seconds from starting tenant b's `small` runs to the last of their results, after tenant a
// started `backlog` runs (none when 0), on a started engine.
double small_tenant_seconds(const std::string& url, int backlog, int small, long long* backlog_left) {
  FlowEngines flow(url);
  flow.start_engine();
  wait_for(start_many(flow.client, 8, [](int i) { return std::pair{fmt::format("warm-{}", i), on_flow_queue("w")}; }));
  if (backlog > 0) {
    progress("flow: tenant a starts {} runs", backlog);
    start_many(flow.client, backlog, [](int i) { return std::pair{fmt::format("a-{}", i), on_flow_queue("a")}; });
  }
  const auto started = Clock::now();
  wait_for(start_many(flow.client, small, [](int i) { return std::pair{fmt::format("b-{}", i), on_flow_queue("b")}; }));
  const double seconds = seconds_since(started);
  if (backlog_left) *backlog_left = flow.client.queues().get(flow_queue).queued;
  return seconds;
}

// Steps per second of `runs` one-step runs queued first, then drained by a started engine: on
// the default queue, or on the flow queue spread over `keys` keys.
double drained_steps_per_s(const std::string& url, int runs, int keys) {
  FlowEngines flow(url);
  start_many(flow.client, runs, [keys](int i) {
    return std::pair{fmt::format("r-{}", i),
                     keys > 0 ? on_flow_queue(fmt::format("k{}", i % keys)) : durable::StartOptions{}};
  });
  const auto started = Clock::now();
  flow.start_engine();
  std::vector<ChainHandle> handles;
  handles.reserve(static_cast<std::size_t>(runs));
  for (int i = 0; i < runs; ++i) handles.push_back(flow.client.workflow<NoopChain>(fmt::format("r-{}", i)));
  wait_for(handles);
  return runs / seconds_since(started);
}

}  // namespace

Result measure_flow_neighbour(const std::string& url, int backlog, int small) {
  progress("flow: {} runs of tenant b alone", small);
  const double alone = small_tenant_seconds(url, 0, small, nullptr);
  long long left = 0;
  const double behind = small_tenant_seconds(url, backlog, small, &left);
  const double ratio = behind / alone;
  return {{"bench", "flow_noisy_neighbour"},
          {"backlog_runs", backlog},
          {"small_runs", small},
          {"alone_s", alone},
          {"behind_backlog_s", behind},
          {"backlog_left_queued", left},
          {"ratio", ratio},
          {"aim_ratio", aim_flow_neighbour_ratio},
          {"aim_met", ratio <= aim_flow_neighbour_ratio}};
}

Result measure_flow_claim(const std::string& url, int runs, int keys) {
  progress("flow: {} one-step runs queued on the default queue, then over {} keys of a queue, in turns", runs, keys);
  // Each twice, in turns (ABBA), so that a drift of the machine weighs on both alike.
  const double none_1 = drained_steps_per_s(url, runs, 0);
  const double keyed_1 = drained_steps_per_s(url, runs, keys);
  const double keyed_2 = drained_steps_per_s(url, runs, keys);
  const double none_2 = drained_steps_per_s(url, runs, 0);
  const double none = (none_1 + none_2) / 2, keyed = (keyed_1 + keyed_2) / 2;
  return {{"bench", "flow_claim_cost"},
          {"runs", runs},
          {"keys", keys},
          {"default_queue_steps_per_s", none},
          {"keyed_queue_steps_per_s", keyed},
          {"ratio", keyed / none},
          {"aim_ratio", aim_flow_claim_ratio},
          {"aim_met", keyed / none >= aim_flow_claim_ratio}};
}

}  // namespace bench
