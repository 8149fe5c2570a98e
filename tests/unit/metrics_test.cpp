#include <catch2/catch.hpp>

#include <durable/metrics.hpp>
#include <limits>
#include <string>

using durable::EngineMetrics;
using durable::Histogram;

namespace {

// Two instances: one busy with a few latency observations, one idle whose queue read failed
// and whose instance name needs every escape.
std::vector<EngineMetrics> snapshot() {
  EngineMetrics a;
  a.instance = "api-1";
  a.schema = "durable";
  a.activity_capacity = 4;
  a.activity_busy = 3;
  a.stuck_slots = 1;
  a.activity_in_flight = 5;
  a.saturation = 0.75;
  a.queue_age_seconds = 2.5;
  a.workflow_queue_age_seconds = 0.5;
  a.workflows_blocked = 2;
  a.queues = {{.queue = "tenants",
               .queued = 12,
               .running = 3,
               .throttled = 9,
               .oldest_queued_seconds = 1.5,
               .paused = false,
               .activities_waiting = 4,
               .activities_running = 2},
              {.queue = "bulk\"x",
               .queued = 0,
               .running = 0,
               .throttled = 0,
               .oldest_queued_seconds = 0,
               .paused = true,
               .activities_waiting = 0,
               .activities_running = 0}};
  a.claims = 10;
  a.rejected_claims = 7;
  a.completions = 8;
  a.retries = 1;
  a.failures = 1;
  a.timeouts = 1;
  a.lease_expiries = 2;
  a.idempotency_input_mismatches = 0;
  a.run_at_once = 3;
  a.outcome_commits = 4;
  a.replays = 20;
  a.workflows_completed = 5;
  a.workflows_failed = 1;
  a.claim_latency = {.bounds = {0.0005, 0.001, 1}, .buckets = {1, 2, 0, 1}, .count = 4, .sum = 2.0025};
  a.replay_latency = {.bounds = {0.0025, 2.5, 10}, .buckets = {0, 1, 0, 0}, .count = 1, .sum = 0.3};

  EngineMetrics b;
  b.instance = "a\\b\"c\nd";
  b.schema = "billing";
  b.activity_capacity = 2;
  b.completions = 1;
  b.claim_latency = {.bounds = {0.0005, 0.001, 1}, .buckets = {0, 0, 0, 0}, .count = 0, .sum = 0};
  return {a, b};
}

const char* const expected = R"(# HELP durable_activity_slots Activity slots of this instance (its activity concurrency)
# TYPE durable_activity_slots gauge
durable_activity_slots{schema="durable",engine_instance="api-1"} 4
durable_activity_slots{schema="billing",engine_instance="a\\b\"c\nd"} 2
# HELP durable_activity_slots_busy Activity slots with a body running, stuck ones included
# TYPE durable_activity_slots_busy gauge
durable_activity_slots_busy{schema="durable",engine_instance="api-1"} 3
durable_activity_slots_busy{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_activity_slots_stuck Activity slots held by bodies still running after their attempt timed out
# TYPE durable_activity_slots_stuck gauge
durable_activity_slots_stuck{schema="durable",engine_instance="api-1"} 1
durable_activity_slots_stuck{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_activity_in_flight Activity tasks leased to this instance whose outcome is not committed yet (at most twice the slots)
# TYPE durable_activity_in_flight gauge
durable_activity_in_flight{schema="durable",engine_instance="api-1"} 5
durable_activity_in_flight{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_activity_saturation Busy activity slots divided by activity slots (0 to 1)
# TYPE durable_activity_saturation gauge
durable_activity_saturation{schema="durable",engine_instance="api-1"} 0.75
durable_activity_saturation{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_queue_age_seconds Age of the oldest activity task this instance could claim now (0 when none is waiting)
# TYPE durable_queue_age_seconds gauge
durable_queue_age_seconds{schema="durable",engine_instance="api-1"} 2.5
# HELP durable_workflow_queue_age_seconds Age of the oldest workflow waiting for a replay that this instance could claim now (0 when none is waiting)
# TYPE durable_workflow_queue_age_seconds gauge
durable_workflow_queue_age_seconds{schema="durable",engine_instance="api-1"} 0.5
# HELP durable_workflows_blocked Running workflow runs of this instance's workflows blocked by a non-determinism error (docs/versioning.md)
# TYPE durable_workflows_blocked gauge
durable_workflows_blocked{schema="durable",engine_instance="api-1"} 2
# HELP durable_queue_runs_queued Runs waiting for admission on a named queue this instance serves
# TYPE durable_queue_runs_queued gauge
durable_queue_runs_queued{schema="durable",engine_instance="api-1",queue="tenants"} 12
durable_queue_runs_queued{schema="durable",engine_instance="api-1",queue="bulk\"x"} 0
# HELP durable_queue_runs_running Admitted runs of a named queue that have not ended
# TYPE durable_queue_runs_running gauge
durable_queue_runs_running{schema="durable",engine_instance="api-1",queue="tenants"} 3
durable_queue_runs_running{schema="durable",engine_instance="api-1",queue="bulk\"x"} 0
# HELP durable_queue_runs_throttled Queued runs of a named queue held back by a concurrency limit
# TYPE durable_queue_runs_throttled gauge
durable_queue_runs_throttled{schema="durable",engine_instance="api-1",queue="tenants"} 9
durable_queue_runs_throttled{schema="durable",engine_instance="api-1",queue="bulk\"x"} 0
# HELP durable_queue_oldest_queued_seconds Age of the oldest run waiting for admission on a named queue (0: none)
# TYPE durable_queue_oldest_queued_seconds gauge
durable_queue_oldest_queued_seconds{schema="durable",engine_instance="api-1",queue="tenants"} 1.5
durable_queue_oldest_queued_seconds{schema="durable",engine_instance="api-1",queue="bulk\"x"} 0
# HELP durable_queue_paused 1 when a named queue is paused (it admits nothing), else 0
# TYPE durable_queue_paused gauge
durable_queue_paused{schema="durable",engine_instance="api-1",queue="tenants"} 0
durable_queue_paused{schema="durable",engine_instance="api-1",queue="bulk\"x"} 1
# HELP durable_queue_activities_waiting Activity tasks on a named queue due to run and waiting for a place
# TYPE durable_queue_activities_waiting gauge
durable_queue_activities_waiting{schema="durable",engine_instance="api-1",queue="tenants"} 4
durable_queue_activities_waiting{schema="durable",engine_instance="api-1",queue="bulk\"x"} 0
# HELP durable_queue_activities_running Activity attempts on a named queue running now, all engines together
# TYPE durable_queue_activities_running gauge
durable_queue_activities_running{schema="durable",engine_instance="api-1",queue="tenants"} 2
durable_queue_activities_running{schema="durable",engine_instance="api-1",queue="bulk\"x"} 0
# HELP durable_activity_claims_total Activity tasks this instance took to run (claimed or run at once)
# TYPE durable_activity_claims_total counter
durable_activity_claims_total{schema="durable",engine_instance="api-1"} 10
durable_activity_claims_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_activity_claims_rejected_total Dispatcher polls and wake-ups that found every activity slot busy and claimed nothing
# TYPE durable_activity_claims_rejected_total counter
durable_activity_claims_rejected_total{schema="durable",engine_instance="api-1"} 7
durable_activity_claims_rejected_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_activity_completions_total Activity tasks completed (results committed, reused results included)
# TYPE durable_activity_completions_total counter
durable_activity_completions_total{schema="durable",engine_instance="api-1"} 8
durable_activity_completions_total{schema="billing",engine_instance="a\\b\"c\nd"} 1
# HELP durable_activity_retries_total Failed activity attempts given another attempt
# TYPE durable_activity_retries_total counter
durable_activity_retries_total{schema="durable",engine_instance="api-1"} 1
durable_activity_retries_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_activity_failures_total Activity tasks failed for good (attempts or horizon ran out, or not retryable)
# TYPE durable_activity_failures_total counter
durable_activity_failures_total{schema="durable",engine_instance="api-1"} 1
durable_activity_failures_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_activity_timeouts_total Activity attempts this instance failed for running past their timeout
# TYPE durable_activity_timeouts_total counter
durable_activity_timeouts_total{schema="durable",engine_instance="api-1"} 1
durable_activity_timeouts_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_activity_lease_expiries_total Activity tasks this instance took over after another attempt's lease ran out
# TYPE durable_activity_lease_expiries_total counter
durable_activity_lease_expiries_total{schema="durable",engine_instance="api-1"} 2
durable_activity_lease_expiries_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_activity_idempotency_input_mismatches_total Activity results reused for an idempotency key given another input
# TYPE durable_activity_idempotency_input_mismatches_total counter
durable_activity_idempotency_input_mismatches_total{schema="durable",engine_instance="api-1"} 0
durable_activity_idempotency_input_mismatches_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_activity_run_at_once_total Activity tasks started by the engine that scheduled them, without a claim
# TYPE durable_activity_run_at_once_total counter
durable_activity_run_at_once_total{schema="durable",engine_instance="api-1"} 3
durable_activity_run_at_once_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_activity_outcome_commits_total Statements that committed finished activity tasks' outcomes (several per statement under load)
# TYPE durable_activity_outcome_commits_total counter
durable_activity_outcome_commits_total{schema="durable",engine_instance="api-1"} 4
durable_activity_outcome_commits_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_workflow_replays_total Workflow replays committed (workflow code run against its journal)
# TYPE durable_workflow_replays_total counter
durable_workflow_replays_total{schema="durable",engine_instance="api-1"} 20
durable_workflow_replays_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_workflow_completions_total Workflow runs completed by this instance's replays
# TYPE durable_workflow_completions_total counter
durable_workflow_completions_total{schema="durable",engine_instance="api-1"} 5
durable_workflow_completions_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_workflow_failures_total Workflow runs failed by this instance's replays
# TYPE durable_workflow_failures_total counter
durable_workflow_failures_total{schema="durable",engine_instance="api-1"} 1
durable_workflow_failures_total{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_claim_latency_seconds Duration of one claim round trip to the database (activity tasks and workflows)
# TYPE durable_claim_latency_seconds histogram
durable_claim_latency_seconds_bucket{schema="durable",engine_instance="api-1",le="0.0005"} 1
durable_claim_latency_seconds_bucket{schema="durable",engine_instance="api-1",le="0.001"} 3
durable_claim_latency_seconds_bucket{schema="durable",engine_instance="api-1",le="1"} 3
durable_claim_latency_seconds_bucket{schema="durable",engine_instance="api-1",le="+Inf"} 4
durable_claim_latency_seconds_sum{schema="durable",engine_instance="api-1"} 2.0025
durable_claim_latency_seconds_count{schema="durable",engine_instance="api-1"} 4
durable_claim_latency_seconds_bucket{schema="billing",engine_instance="a\\b\"c\nd",le="0.0005"} 0
durable_claim_latency_seconds_bucket{schema="billing",engine_instance="a\\b\"c\nd",le="0.001"} 0
durable_claim_latency_seconds_bucket{schema="billing",engine_instance="a\\b\"c\nd",le="1"} 0
durable_claim_latency_seconds_bucket{schema="billing",engine_instance="a\\b\"c\nd",le="+Inf"} 0
durable_claim_latency_seconds_sum{schema="billing",engine_instance="a\\b\"c\nd"} 0
durable_claim_latency_seconds_count{schema="billing",engine_instance="a\\b\"c\nd"} 0
# HELP durable_replay_latency_seconds Duration of one workflow replay: read the journal's tail, run the code, commit
# TYPE durable_replay_latency_seconds histogram
durable_replay_latency_seconds_bucket{schema="durable",engine_instance="api-1",le="0.0025"} 0
durable_replay_latency_seconds_bucket{schema="durable",engine_instance="api-1",le="2.5"} 1
durable_replay_latency_seconds_bucket{schema="durable",engine_instance="api-1",le="10"} 1
durable_replay_latency_seconds_bucket{schema="durable",engine_instance="api-1",le="+Inf"} 1
durable_replay_latency_seconds_sum{schema="durable",engine_instance="api-1"} 0.3
durable_replay_latency_seconds_count{schema="durable",engine_instance="api-1"} 1
durable_replay_latency_seconds_bucket{schema="billing",engine_instance="a\\b\"c\nd",le="+Inf"} 0
durable_replay_latency_seconds_sum{schema="billing",engine_instance="a\\b\"c\nd"} 0
durable_replay_latency_seconds_count{schema="billing",engine_instance="a\\b\"c\nd"} 0
)";

}  // namespace

TEST_CASE("prometheus_text renders every family with escaped labels and cumulative buckets", "[unit][metrics]") {
  CHECK(durable::prometheus_text(snapshot()) == expected);
}

TEST_CASE("prometheus_text of no instances is empty", "[unit][metrics]") {
  CHECK(durable::prometheus_text({}).empty());
}

TEST_CASE("prometheus_text writes special values as Prometheus does", "[unit][metrics]") {
  EngineMetrics m;
  m.instance = "i";
  m.schema = "s";
  m.saturation = std::numeric_limits<double>::quiet_NaN();  // capacity 0 would give this
  m.queue_age_seconds = 1e-05;
  const std::string text = durable::prometheus_text({m});
  CHECK_THAT(text, Catch::Contains("durable_activity_saturation{schema=\"s\",engine_instance=\"i\"} NaN\n"));
  CHECK_THAT(text, Catch::Contains("durable_queue_age_seconds{schema=\"s\",engine_instance=\"i\"} 1e-05\n"));
}

TEST_CASE("quantile_bound is the smallest bound holding at least q of the observations", "[unit][metrics]") {
  SECTION("empty: no answer") {
    CHECK_FALSE(Histogram{}.quantile_bound(0.5).has_value());
    CHECK_FALSE(Histogram{.bounds = {0.1, 1}, .buckets = {0, 0, 0}}.quantile_bound(0.99).has_value());
  }
  // 2 in (0, 0.1], 2 in (0.1, 0.5], none in (0.5, 1], 1 past 1.
  const Histogram h{.bounds = {0.1, 0.5, 1}, .buckets = {2, 2, 0, 1}, .count = 5, .sum = 3.0};
  SECTION("exact bucket edges") {
    CHECK(h.quantile_bound(0.4) == 0.1);   // exactly 2 of 5 under 0.1
    CHECK(h.quantile_bound(0.41) == 0.5);  // a hair more needs the next bucket
    CHECK(h.quantile_bound(0.8) == 0.5);   // exactly 4 of 5 under 0.5
  }
  SECTION("past the last bound: +infinity") {
    CHECK(h.quantile_bound(0.81) == std::numeric_limits<double>::infinity());
    CHECK(h.quantile_bound(1.0) == std::numeric_limits<double>::infinity());
  }
  SECTION("no rounding up from floating-point products") {
    // 0.07 * 100 is 7.000000000000001 in doubles; 7 of 100 still qualify.
    const Histogram hundred{.bounds = {1, 2}, .buckets = {7, 93, 0}, .count = 100, .sum = 193};
    CHECK(hundred.quantile_bound(0.07) == 1);
    CHECK(hundred.quantile_bound(0.08) == 2);
    CHECK(hundred.quantile_bound(1.0) == 2);
  }
  SECTION("every observation past the bounds") {
    const Histogram slow{.bounds = {0.1}, .buckets = {0, 3}, .count = 3, .sum = 9};
    CHECK(slow.quantile_bound(0.01) == std::numeric_limits<double>::infinity());
  }
}
