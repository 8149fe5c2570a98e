// Runs at scale (issue 16): the management API (durable/runs.hpp) with a million ended runs and
// a hundred thousand running ones in the tables: pages of lists, a 1,000-step run's history and
// get, on an engine that is not started; then a prune of every ended run while engines go on
// working in the same schema.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <httplib.h>

#include "bench_workflows.hpp"
#include "console/console.hpp"
#include "measurements.hpp"

namespace bench {

using namespace std::chrono_literals;

namespace {

constexpr int repetitions = 20;  // of each timed call
constexpr int page_size = 100;
constexpr int long_run_steps = 1000;
constexpr auto long_run_id = "long-run";           // as the loading SQL names it
constexpr auto other_workflow = "nightly_report";  // a third of the runs, as the loading SQL names them

// The engine's run ids are version 7 uuids: the millisecond they were made in, then random
// bits. Loaded runs get theirs from when they started, so that runs started (and so pruned)
// together sit together in every index led by the run id, as in a live schema: with random ids
// each prune batch would read a page of each such index per run. For the load's session only.
constexpr auto run_id_function_sql = R"(
CREATE FUNCTION pg_temp.run_id(at timestamptz, key text) RETURNS uuid LANGUAGE sql IMMUTABLE
  AS $$ SELECT (lpad(to_hex((extract(epoch FROM at) * 1000)::bigint), 12, '0') || '7' || left(md5(key), 19))::uuid $$)";

// Ended runs, one every 6 days / {rows} over the six days up to an hour ago, each ending 1.5 s
// after it started: every one has ended before the measurement starts. 1 % failed (an error the
// workflow code raised after its activity completed); a third are of the other workflow.
constexpr auto ended_runs_sql = R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, result, error_type, error_message, next_seq,
                           runnable, claim_token, created_at, updated_at, ended_at)
SELECT 'ended-' || g, pg_temp.run_id(t.at, 'ended-' || g), CASE WHEN g % 3 = 0 THEN 'nightly_report' ELSE '{workflow}' END,
       CASE WHEN g % 100 = 0 THEN 'failed' ELSE 'completed' END, '1', CASE WHEN g % 100 <> 0 THEN '0'::jsonb END,
       CASE WHEN g % 100 = 0 THEN 'std::runtime_error' END, CASE WHEN g % 100 = 0 THEN 'the source is down' END, 4,
       false, md5('claim-' || g)::uuid::text, t.at, t.at + interval '1.5 seconds', t.at + interval '1.5 seconds'
FROM generate_series(1, {rows}) AS g,
     LATERAL (SELECT now() - interval '6 days 1 hour' + g * (interval '6 days' / {rows}) AS at) AS t)";

// Runs waiting (for a timer, a signal, a child) that no engine claims: started over the same
// days, interleaved with the ended ones.
constexpr auto running_runs_sql = R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, created_at, updated_at)
SELECT 'waiting-' || g, pg_temp.run_id(t.at, 'waiting-' || g), CASE WHEN g % 3 = 0 THEN 'nightly_report' ELSE '{workflow}' END,
       'running', '1', 2, false, t.at, t.at
FROM generate_series(1, {rows}) AS g,
     LATERAL (SELECT now() - interval '6 days 1 hour' + g * (interval '6 days' / {rows}) AS at) AS t)";

// One completed NoopChain run of {rows} steps, as the engine journals it: started, then each
// step's activity scheduled and completed, then completed, one journal row per commit (a
// completed task leaves no row). Its last event is the newest ended run's.
const std::vector<std::string> long_run_sql = {R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, result, next_seq, runnable, claim_token,
                           created_at, updated_at, ended_at)
SELECT 'long-run', pg_temp.run_id(t.at, 'long-run'), '{workflow}', 'completed', to_jsonb({rows}),
       to_jsonb({rows} * ({rows} - 1) / 2), 2 * {rows} + 2, false, md5('claim-long-run')::uuid::text, t.at,
       t.at + (2 * {rows} + 1) * interval '1 millisecond', t.at + (2 * {rows} + 1) * interval '1 millisecond'
FROM (SELECT now() - interval '1 hour' AS at) AS t)",
                                               R"(
INSERT INTO {s}.journal (run_id, seq, kind, step, name, data, created_at, more)
SELECT w.run_id, e.seq, e.kind, e.step, e.name,
       CASE WHEN e.kind = 'activity_completed'  -- its attempt started after its scheduling, 1 ms before its end
            THEN e.data || jsonb_build_object('started_us', {s}.epoch_us(w.created_at) + (e.seq - 1) * 1000)
            ELSE e.data END,
       w.created_at + e.seq * interval '1 millisecond', e.more
FROM {s}.workflows w,
     (SELECT 0 AS seq, 'workflow_started' AS kind, NULL::integer AS step, NULL::text AS name,
             jsonb_build_object('input', {rows}) AS data, NULL::jsonb AS more
      UNION ALL
      SELECT 1, 'activity_scheduled', 0, '{activity}', jsonb_build_object('input', 0, 'options', {options}), NULL
      UNION ALL  -- each step's completion, committed with the next step's scheduling (or the run's end)
      SELECT 2 * g + 2, 'activity_completed', g, '{activity}', jsonb_build_object('result', g, 'attempts', 1),
             jsonb_build_array(CASE WHEN g < {rows} - 1
               THEN jsonb_build_array('activity_scheduled', g + 1, '{activity}',
                                      jsonb_build_object('input', g + 1, 'options', {options}))
               ELSE jsonb_build_array('workflow_completed', NULL, NULL,
                                      jsonb_build_object('result', {rows} * ({rows} - 1) / 2)) END)
      FROM generate_series(0, {rows} - 1) AS g)
     AS e
WHERE w.workflow_id = 'long-run')"};

Result runs_result(const char* what, const std::string& label) {
  return {{"bench", "runs"}, {"what", what}, {"label", label}};
}

Result load_runs(const std::string& url, const std::string& schema, const RunsScale& scale) {
  progress("runs: loading {} ended runs with their history, {} running runs and one {}-step run", scale.ended_runs,
           scale.running_runs, long_run_steps);
  const auto start = Clock::now();
  std::vector<std::string> statements = {run_id_function_sql, loading_sql(ended_runs_sql, schema, scale.ended_runs),
                                         loading_sql(running_runs_sql, schema, scale.running_runs)};
  for (const auto& sql : long_run_sql) statements.push_back(loading_sql(sql, schema, long_run_steps));
  for (const auto& sql : one_step_history_sql()) statements.push_back(loading_sql(sql, schema, 0));
  load_by_sql(url, schema, statements, "runs");
  Result result = runs_result("load", "load");
  result["ended_runs"] = scale.ended_runs;
  result["running_runs"] = scale.running_runs;
  result["long_run_steps"] = long_run_steps;
  result["load_seconds"] = seconds_since(start);
  return result;
}

// ---- Timed reads ----

// Median and max, in ms, of `repetitions` calls. The first call is timed too: max shows what
// a first look at pages the cache has not seen yet costs.
template <typename Call>
Result timed(Result result, std::optional<double> aim_ms, Call&& call) {
  std::vector<double> ms;
  for (int i = 0; i < repetitions; ++i) {
    const auto start = Clock::now();
    call();
    ms.push_back(seconds_since(start) * 1000.0);
  }
  std::sort(ms.begin(), ms.end());
  const double median = percentile(ms, 50);
  result["repetitions"] = repetitions;
  result["median_ms"] = median;
  result["max_ms"] = ms.back();
  if (aim_ms) {
    result["aim_ms"] = *aim_ms;
    result["aim_met"] = median < *aim_ms;
  }
  return result;
}

// A wrong answer means the API is broken, not fast.
void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(fmt::format("runs: {} came back wrong", what));
}

bool matches(const durable::RunSummary& run, const durable::RunFilter& filter) {
  return (filter.statuses.empty() || run.status == filter.statuses.front()) &&
         (filter.workflow_name.empty() || run.workflow_name == filter.workflow_name);
}

Result time_page(const durable::Runs& runs, const char* what, const std::string& label,
                 const durable::RunQuery& query) {
  durable::RunPage page;
  Result result = timed(runs_result(what, label), aim_page_ms, [&] { page = runs.list(query); });
  check(!page.runs.empty() && std::all_of(page.runs.begin(), page.runs.end(),
                                          [&](const auto& run) { return matches(run, query.filter); }),
        label);
  result["runs"] = page.runs.size();
  return result;
}

void time_lists(const durable::Runs& runs, const std::function<void(Result)>& report) {
  progress("runs: timing pages of {} runs, {} times each", page_size, repetitions);
  using durable::WorkflowStatus;
  struct Case {
    const char* what;
    std::string label;
    durable::RunFilter filter;
  };
  const std::vector<Case> cases = {
      {"list_failed", "list first page, status failed", {.statuses = {WorkflowStatus::failed}}},
      {"list_running", "list first page, status running", {.statuses = {WorkflowStatus::running}}},
      {"list_by_name", fmt::format("list first page, workflow {}", other_workflow), {.workflow_name = other_workflow}},
      {"list_all", "list first page, no filter", {}},
  };
  for (const auto& c : cases) report(time_page(runs, c.what, c.label, {.filter = c.filter, .limit = page_size}));
  const std::string cursor = runs.list({.limit = page_size}).next_cursor;
  report(time_page(runs, "list_second_page", "list second page (cursor), no filter",
                   {.limit = page_size, .cursor = cursor}));
}

// The whole history, page after page, as a reader follows next_seq.
durable::History whole_history(const durable::Runs& runs, const durable::RunId& run_id) {
  durable::History all;
  std::optional<int> from = 0;
  while (from) {
    durable::History page = runs.history(run_id, {.from_seq = *from, .limit = 1000});
    all.events.insert(all.events.end(), page.events.begin(), page.events.end());
    all.attempts.insert(all.attempts.end(), page.attempts.begin(), page.attempts.end());
    from = page.next_seq;
  }
  return all;
}

void time_long_run(const durable::Runs& runs, const std::function<void(Result)>& report) {
  progress("runs: timing the {}-step run's history and get, {} times each", long_run_steps, repetitions);
  const durable::RunId run_id = runs.latest(long_run_id).run_id;
  const std::size_t events = 2 * long_run_steps + 2;
  durable::History history;
  // One page holds at most 1,000 events, and the run has 2,002: the aim is judged on all of them too.
  Result page = timed(runs_result("history_page", "history of the 1000-step run, one page of 1000 events"),
                      aim_history_ms, [&] { history = runs.history(run_id, {.limit = 1000}); });
  check(history.events.size() == 1000 && history.next_seq == 1000, "a page of history");
  page["events"] = history.events.size();
  page["attempts"] = history.attempts.size();
  report(std::move(page));
  Result whole = timed(runs_result("history_whole", fmt::format("history of the 1000-step run, all {} events", events)),
                       aim_history_ms, [&] { history = whole_history(runs, run_id); });
  check(history.events.size() == events && history.attempts.size() == long_run_steps, "the whole history");
  whole["events"] = history.events.size();
  whole["attempts"] = history.attempts.size();
  report(std::move(whole));
  durable::RunInfo info;
  report(timed(runs_result("get", "get of the 1000-step run"), std::nullopt, [&] { info = runs.get(run_id); }));
  check(info.journal_length == static_cast<int>(events) && info.attempts == long_run_steps, "get");
}

// The web console's runs page (issue 19): the two requests the page makes, a page of 50 runs and
// the counts by status under the same filter, answered by the console's server over loopback HTTP,
// one after the other (the browser sends them at once: this is at least its wait).
void time_console(durable::Engine& engine, const std::function<void(Result)>& report) {
  progress("runs: timing the console's runs page, {} times each", repetitions);
  durable::console::Console console(engine, {.listen = "127.0.0.1:0", .read_only = true});
  console.start();
  httplib::Client client("127.0.0.1", console.port());
  auto get = [&](const std::string& path) {
    const auto res = client.Get(path.c_str());
    check(res && res->status == 200, "the console's " + path);
  };
  struct Case {
    const char* what;
    const char* label;
    std::string query;
  };
  const std::vector<Case> cases = {
      {"console_runs_page", "console runs page (50 runs + counts), no filter", ""},
      {"console_failed_page", "console runs page (50 runs + counts), status failed", "status=failed"},
      {"console_name_page", "console runs page (50 runs + counts), one workflow name",
       std::string("name=") + other_workflow},
  };
  for (const auto& c : cases) {
    report(timed(runs_result(c.what, c.label), aim_console_page_ms, [&] {
      get("/api/runs?limit=50" + (c.query.empty() ? "" : "&" + c.query));
      get("/api/counts" + (c.query.empty() ? "" : "?" + c.query));
    }));
  }
  console.stop();
}

// ---- Prune while engines work ----

struct PruneRun {
  durable::PruneOutcome outcome;
  double seconds = 0;
};

Result prune_result(const PruneRun& prune) {
  Result result = runs_result("prune", "prune every ended run, during 10-step throughput");
  const double runs_per_s = static_cast<double>(prune.outcome.runs) / prune.seconds;
  result["runs"] = prune.outcome.runs;
  result["batches"] = prune.outcome.batches;
  result["seconds"] = prune.seconds;
  result["runs_per_s"] = runs_per_s;
  result["aim_runs_per_s"] = aim_prune_runs_per_s;
  result["aim_met"] = runs_per_s >= aim_prune_runs_per_s;
  return result;
}

Result throughput_result(const char* what, const std::string& label, int workflows, double seconds) {
  Result result = runs_result(what, label);
  result["steps"] = 10;
  result["processes"] = 1;
  result["workflows"] = workflows;
  result["seconds"] = seconds;
  result["workflows_per_s"] = workflows / seconds;
  result["steps_per_s"] = workflows * 10 / seconds;
  return result;
}

// Throughput runs of `workflows` each, one after another for as long as the prune goes on: the
// prune works under load throughout (but for each run's untimed start of its engine process), and
// the throughput is taken over the whole prune. Only its own figures: its PostgreSQL cost would
// count the prune's too. A run that ends after the prune did was partly alone, so it is left out,
// unless it is the first (a prune shorter than one run): then the result says so.
Result throughput_during(const std::string& url, const std::string& schema, int workflows,
                         const std::future<PruneRun>& pruning) {
  int runs = 0;
  double seconds = 0;
  bool overlapped = true;
  for (bool pruning_on = true; pruning_on;) {
    const Result r =
        run_throughput(url, schema, 10, 1, workflows, Starts::while_running, fmt::format("during-prune-{}-", runs));
    pruning_on = pruning.wait_for(0s) == std::future_status::timeout;
    if (!pruning_on && runs > 0) break;
    ++runs;
    seconds += r["seconds"].get<double>();
    overlapped = pruning_on;
  }
  Result result =
      throughput_result("throughput_during_prune", "10-step throughput during the prune", runs * workflows, seconds);
  result["runs"] = runs;
  result["prune_outlasted_throughput"] = overlapped;
  return result;
}

void compare_to_alone(Result& during, const Result& alone) {
  const double ratio = during["steps_per_s"].get<double>() / alone["steps_per_s"].get<double>();
  during["ratio_to_alone"] = ratio;
  during["aim_ratio_to_alone"] = aim_ratio_during_prune;
  // A throughput run that outlasted the prune was partly alone: its ratio cannot show the aim met.
  during["aim_met"] = during["prune_outlasted_throughput"].get<bool>() && ratio >= aim_ratio_during_prune;
}

void prune_under_load(const std::string& url, const std::string& schema, durable::Runs& runs,
                      std::chrono::system_clock::time_point cutoff, const RunsScale& scale,
                      const std::function<void(Result)>& report) {
  const int workflows = scale.throughput_workflows;
  progress("runs: {} x 10-step workflows on 1 engine process, alone", workflows);
  const Result alone = throughput_result(
      "throughput_alone", "10-step throughput alone", workflows,
      run_throughput(url, schema, 10, 1, workflows, Starts::while_running, "alone-")["seconds"].get<double>());
  report(alone);
  progress("runs: pruning every ended run, while runs of {} x 10-step workflows follow each other on 1 engine process",
           workflows);
  auto pruning = std::async(std::launch::async, [&] {
    const auto start = Clock::now();
    const auto outcome = runs.prune(cutoff, {"bench", "bench prune"});
    return PruneRun{outcome, seconds_since(start)};
  });
  Result during = throughput_during(url, schema, workflows, pruning);
  const PruneRun prune = pruning.get();
  progress("runs: pruned {} runs in {:.1f} s", prune.outcome.runs, prune.seconds);
  // Every loaded ended run and the long one; none of the throughput runs (they ended after the cutoff).
  check(prune.outcome.runs == scale.ended_runs + 1, "the prune's count");
  report(prune_result(prune));
  compare_to_alone(during, alone);
  report(std::move(during));
}

}  // namespace

void measure_runs(const std::string& url, const RunsScale& scale, const std::function<void(Result)>& report) {
  ScratchSchema schema(url);
  migrate(url, schema.name());
  report(load_runs(url, schema.name(), scale));
  // Every loaded run has ended before this, and every throughput run below ends after it.
  const auto cutoff = std::chrono::system_clock::now();
  durable::Engine engine(engine_options(url, schema.name()));  // never started: the management API needs none
  durable::Runs& runs = engine.runs();
  runs.list({.limit = 1});  // untimed: opens the connection the timed calls use
  time_lists(runs, report);
  time_long_run(runs, report);
  time_console(engine, report);
  prune_under_load(url, schema.name(), runs, cutoff, scale, report);
}

}  // namespace bench
