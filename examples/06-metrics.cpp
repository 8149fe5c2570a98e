// Metrics: an engine ships a few orders (one packing attempt fails and is retried), then
// serves its gauges, counters and latency histograms at /metrics in the Prometheus text
// format, on loopback, and scrapes itself once. See docs/operations.md for what each series means.
//
// Run: build/examples/06-metrics   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <httplib.h>  // cpp-httplib (Debian: libcpp-httplib-dev)
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <sstream>
#include <stdexcept>
#include <thread>

using namespace std::chrono_literals;

struct PackParcel {
  static constexpr auto name = "pack_parcel";
  static durable::ActivityOptions options() { return {.retry = durable::RetryPolicy{.max_attempts = 3, .base = 50ms}}; }
  std::string operator()(durable::ActivityContext& ctx, const std::string& order) const {
    if (order == "order-2" && ctx.attempt() == 1) throw std::runtime_error("label printer jammed");  // retried once
    return "parcel-" + order;
  }
};

struct ShipOrder {
  static constexpr auto name = "ship_order";
  std::string operator()(durable::WorkflowContext& ctx, const std::string& order) {
    return ctx.call<PackParcel>(order);
  }
};

// Prints a few of the series, as a Prometheus server would read them, and checks the values
// this run must have produced.
static bool scraped_as_expected(const std::string& body_text, const std::string& schema) {
  bool found = true;
  const std::string series[] = {"durable_activity_completions_total", "durable_activity_retries_total",
                                "durable_workflow_completions_total", "durable_activity_slots{",
                                "durable_activity_saturation",        "durable_queue_age_seconds",
                                "durable_workflow_queue_age_seconds", "durable_claim_latency_seconds_count"};
  std::istringstream body(body_text);
  for (std::string line; std::getline(body, line);) {
    for (const auto& name : series) {
      if (line.rfind(name, 0) == 0) fmt::print("  {}\n", line);
    }
  }
  const std::string labels = fmt::format("{{schema=\"{}\",engine_instance=\"shipping\"}}", schema);
  for (const auto& expected :
       {"durable_activity_completions_total" + labels + " 3\n", "durable_activity_retries_total" + labels + " 1\n",
        "durable_workflow_completions_total" + labels + " 3\n", "durable_activity_slots" + labels + " 4\n",
        "durable_workflow_queue_age_seconds" + labels + " 0\n"}) {
    if (body_text.find(expected) == std::string::npos) {
      fmt::print("missing from /metrics: {}", expected);
      found = false;
    }
  }
  return found;
}

int main() {
  const std::string url = durable::testing::database_url();
  const std::string schema = "durable_example_metrics";
  durable::testing::drop_schema(url, schema);
  // [instances]
  // One options value sizes every instance of the deployment; each engine takes its name's entry.
  durable::EngineOptions options{.database_url = url,
                                 .schema = schema,
                                 .activity_max_concurrency = 10,  // instances not listed below
                                 .instance_activity_concurrency = {{"shipping", 4}, {"reports", 20}}};
  options.instance = "shipping";  // e.g. from the environment: this engine runs 4 activities at once
  durable::Engine engine(options);
  engine.add<PackParcel>().add<ShipOrder>();  // the activities and workflows this instance runs
  // [instances]
  engine.start();

  bool ok = true;
  for (int i = 1; i <= 3; ++i) {
    const std::string order = fmt::format("order-{}", i);
    const std::string parcel = engine.start_workflow<ShipOrder>("ship-" + order, order).result(30s);
    fmt::print("{} -> {}\n", order, parcel);
    ok = ok && parcel == "parcel-" + order;
  }
  // The counters move just after each commit: give the last one a moment.
  for (int tries = 0; tries < 100 && engine.metrics().workflows_completed < 3; ++tries) {
    std::this_thread::sleep_for(20ms);
  }

  // [metrics-endpoint]
  httplib::Server svr;
  svr.Get("/metrics", [&engine](const httplib::Request&, httplib::Response& res) {
    // A fresh snapshot per scrape; it reads the queue ages from the database.
    res.set_content(durable::prometheus_text({engine.metrics()}), "text/plain; version=0.0.4; charset=utf-8");
  });
  const int port = svr.bind_to_any_port("127.0.0.1");  // loopback only; -1 when binding failed
  if (port < 0) throw std::runtime_error("could not bind 127.0.0.1 for /metrics");
  std::thread server([&svr] { svr.listen_after_bind(); });
  // [metrics-endpoint]
  while (!svr.is_running()) std::this_thread::sleep_for(1ms);
  fmt::print("serving http://127.0.0.1:{}/metrics\n", port);

  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  auto res = client.Get("/metrics");
  svr.stop();
  server.join();
  if (!res) {
    fmt::print("GET /metrics failed: {}\n", httplib::to_string(res.error()));
    return 1;
  }
  const std::string content_type = res->get_header_value("Content-Type");
  fmt::print("HTTP {}, Content-Type: {}\n", res->status, content_type);
  ok = ok && res->status == 200 && content_type == "text/plain; version=0.0.4; charset=utf-8";

  ok = ok && scraped_as_expected(res->body, schema);

  engine.stop();
  durable::testing::drop_schema(url, schema);
  return ok ? 0 : 1;
}
