// Histogram::quantile_bound and the Prometheus text exposition (format 0.0.4), written by hand.
//
// Every metric family gets one `# HELP` and one `# TYPE` line, then one sample per instance,
// labelled `schema` and `engine_instance` (not `instance`, which Prometheus sets to the scraped target). An empty list of instances renders as the empty string
// (no HELP/TYPE lines either). The queue age sample of an instance whose queue read failed
// is left out; its other series are still written.
#include "durable/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace durable {

std::optional<double> Histogram::quantile_bound(double q) const {
  if (count == 0) return std::nullopt;
  // At least q of `count` observations; the slack keeps 0.07 * 100 (7.000000000000001) at 7.
  const double wanted = std::clamp(q, 0.0, 1.0) * static_cast<double>(count) * (1 - 1e-12);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (i < buckets.size()) seen += buckets[i];
    if (static_cast<double>(seen) >= wanted) return bounds[i];
  }
  return std::numeric_limits<double>::infinity();
}

namespace {

// Numbers as Prometheus clients write them: shortest round-trip form, "+Inf", "-Inf", "NaN".
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

std::string label_value(const std::string& raw) {
  std::string out;
  out.reserve(raw.size());
  for (char c : raw) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

// `schema="...",engine_instance="..."`, without braces so histograms can append `le`.
std::string labels_of(const EngineMetrics& m) {
  return fmt::format("schema=\"{}\",engine_instance=\"{}\"", label_value(m.schema), label_value(m.instance));
}

struct Gauge {
  const char* name;
  const char* help;
  std::optional<std::string> (*value)(const EngineMetrics&);  // nullopt: no sample for this instance
};

const Gauge gauges[] = {
    {"durable_activity_slots", "Activity slots of this instance (its activity concurrency)",
     [](const EngineMetrics& m) -> std::optional<std::string> { return fmt::format("{}", m.activity_capacity); }},
    {"durable_activity_slots_busy", "Activity slots with a body running, stuck ones included",
     [](const EngineMetrics& m) -> std::optional<std::string> { return fmt::format("{}", m.activity_busy); }},
    {"durable_activity_slots_stuck", "Activity slots held by bodies still running after their attempt timed out",
     [](const EngineMetrics& m) -> std::optional<std::string> { return fmt::format("{}", m.stuck_slots); }},
    {"durable_activity_in_flight",
     "Activity tasks leased to this instance whose outcome is not committed yet (at most twice the slots)",
     [](const EngineMetrics& m) -> std::optional<std::string> { return fmt::format("{}", m.activity_in_flight); }},
    {"durable_activity_saturation", "Busy activity slots divided by activity slots (0 to 1)",
     [](const EngineMetrics& m) -> std::optional<std::string> { return number(m.saturation); }},
    {"durable_queue_age_seconds",
     "Age of the oldest activity task this instance could claim now (0 when none is waiting)",
     [](const EngineMetrics& m) -> std::optional<std::string> {
       if (!m.queue_age_seconds) return std::nullopt;
       return number(*m.queue_age_seconds);
     }},
    {"durable_workflow_queue_age_seconds",
     "Age of the oldest workflow waiting for a replay that this instance could claim now (0 when none is waiting)",
     [](const EngineMetrics& m) -> std::optional<std::string> {
       if (!m.workflow_queue_age_seconds) return std::nullopt;
       return number(*m.workflow_queue_age_seconds);
     }},
    {"durable_workflows_blocked",
     "Running workflow runs of this instance's workflows blocked by a non-determinism error (docs/versioning.md)",
     [](const EngineMetrics& m) -> std::optional<std::string> {
       if (!m.workflows_blocked) return std::nullopt;
       return fmt::format("{}", *m.workflows_blocked);
     }},
};

// Per named queue: the instance's labels and `queue`.
struct QueueGauge {
  const char* name;
  const char* help;
  std::string (*value)(const QueueGauges&);
};

const QueueGauge queue_gauges[] = {
    {"durable_queue_runs_queued", "Runs waiting for admission on a named queue this instance serves",
     [](const QueueGauges& q) { return fmt::format("{}", q.queued); }},
    {"durable_queue_runs_running", "Admitted runs of a named queue that have not ended",
     [](const QueueGauges& q) { return fmt::format("{}", q.running); }},
    {"durable_queue_runs_throttled", "Queued runs of a named queue held back by a concurrency limit",
     [](const QueueGauges& q) { return fmt::format("{}", q.throttled); }},
    {"durable_queue_oldest_queued_seconds", "Age of the oldest run waiting for admission on a named queue (0: none)",
     [](const QueueGauges& q) { return number(q.oldest_queued_seconds); }},
    {"durable_queue_paused", "1 when a named queue is paused (it admits nothing), else 0",
     [](const QueueGauges& q) { return std::string(q.paused ? "1" : "0"); }},
    {"durable_queue_activities_waiting", "Activity tasks on a named queue due to run and waiting for a place",
     [](const QueueGauges& q) { return fmt::format("{}", q.activities_waiting); }},
    {"durable_queue_activities_running", "Activity attempts on a named queue running now, all engines together",
     [](const QueueGauges& q) { return fmt::format("{}", q.activities_running); }},
};

struct Counter {
  const char* name;
  const char* help;
  std::uint64_t EngineMetrics::*field;
};

const Counter counters[] = {
    {"durable_activity_claims_total", "Activity tasks this instance took to run (claimed or run at once)",
     &EngineMetrics::claims},
    {"durable_activity_claims_rejected_total",
     "Dispatcher polls and wake-ups that found every activity slot busy and claimed nothing",
     &EngineMetrics::rejected_claims},
    {"durable_activity_completions_total", "Activity tasks completed (results committed, reused results included)",
     &EngineMetrics::completions},
    {"durable_activity_retries_total", "Failed activity attempts given another attempt", &EngineMetrics::retries},
    {"durable_activity_failures_total",
     "Activity tasks failed for good (attempts or horizon ran out, or not retryable)", &EngineMetrics::failures},
    {"durable_activity_timeouts_total", "Activity attempts this instance failed for running past their timeout",
     &EngineMetrics::timeouts},
    {"durable_activity_lease_expiries_total",
     "Activity tasks this instance took over after another attempt's lease ran out", &EngineMetrics::lease_expiries},
    {"durable_activity_idempotency_input_mismatches_total",
     "Activity results reused for an idempotency key given another input",
     &EngineMetrics::idempotency_input_mismatches},
    {"durable_activity_run_at_once_total", "Activity tasks started by the engine that scheduled them, without a claim",
     &EngineMetrics::run_at_once},
    {"durable_activity_outcome_commits_total",
     "Statements that committed finished activity tasks' outcomes (several per statement under load)",
     &EngineMetrics::outcome_commits},
    {"durable_workflow_replays_total", "Workflow replays committed (workflow code run against its journal)",
     &EngineMetrics::replays},
    {"durable_workflow_completions_total", "Workflow runs completed by this instance's replays",
     &EngineMetrics::workflows_completed},
    {"durable_workflow_failures_total", "Workflow runs failed by this instance's replays",
     &EngineMetrics::workflows_failed},
};

struct HistogramFamily {
  const char* name;
  const char* help;
  Histogram EngineMetrics::*field;
};

const HistogramFamily histograms[] = {
    {"durable_claim_latency_seconds", "Duration of one claim round trip to the database (activity tasks and workflows)",
     &EngineMetrics::claim_latency},
    {"durable_replay_latency_seconds", "Duration of one workflow replay: read the journal's tail, run the code, commit",
     &EngineMetrics::replay_latency},
};

void header(std::string& out, const char* name, const char* help, const char* type) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string prometheus_text(const std::vector<EngineMetrics>& instances) {
  std::string out;
  if (instances.empty()) return out;
  auto line = [&out](const char* name, const char* suffix, const std::string& labels, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "{}{}{{{}}} {}\n", name, suffix, labels, value);
  };
  for (const auto& g : gauges) {
    header(out, g.name, g.help, "gauge");
    for (const auto& m : instances) {
      if (auto v = g.value(m)) line(g.name, "", labels_of(m), *v);
    }
  }
  for (const auto& g : queue_gauges) {
    header(out, g.name, g.help, "gauge");
    for (const auto& m : instances) {
      for (const auto& q : m.queues)
        line(g.name, "", labels_of(m) + ",queue=\"" + label_value(q.queue) + "\"", g.value(q));
    }
  }
  for (const auto& c : counters) {
    header(out, c.name, c.help, "counter");
    for (const auto& m : instances) line(c.name, "", labels_of(m), fmt::format("{}", m.*c.field));
  }
  for (const auto& h : histograms) {
    header(out, h.name, h.help, "histogram");
    for (const auto& m : instances) {
      const Histogram& hist = m.*h.field;
      const std::string labels = labels_of(m);
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < hist.bounds.size(); ++i) {
        if (i < hist.buckets.size()) cumulative += hist.buckets[i];
        const std::string le = fmt::format("{},le=\"{}\"", labels, number(hist.bounds[i]));
        line(h.name, "_bucket", le, fmt::format("{}", cumulative));
      }
      // The +Inf bucket holds every observation, so it always equals _count.
      line(h.name, "_bucket", labels + ",le=\"+Inf\"", fmt::format("{}", hist.count));
      line(h.name, "_sum", labels, number(hist.sum));
      line(h.name, "_count", labels, fmt::format("{}", hist.count));
    }
  }
  return out;
}

}  // namespace durable
