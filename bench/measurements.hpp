// The measurements, one source file each, with the aims they are judged by. Each works in a
// fresh schema of its own and returns one Result (one JSON line); runs reports several.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench_workflows.hpp"
#include "support.hpp"

namespace bench {

// ---- raw_queue.cpp: the limit, a minimal job queue on the same PostgreSQL ---------------------

// `jobs` jobs drained by as many worker threads (each with its own connection) as an engine
// runs activities at once by default.
Result measure_raw_queue(const std::string& url, int jobs);

// ---- throughput.cpp --------------------------------------------------------------------------

// When the runs are started, relative to the clock.
//  - queued_first: all runs are started before any engine runs, untimed, and the clock runs
//    from starting the engine processes (their start-up counts) to the last result. Like for like
//    with the raw queue, whose jobs are inserted before its clock starts: the engines only drain.
//  - while_running: the engines are up and warm; the clock runs from the first start to the last
//    result, so every start is timed too (end to end).
enum class Starts { queued_first, while_running };

const char* starts_text(Starts starts);

// `workflows` runs of `steps` steps in `schema`, served by `processes` worker processes; this
// process is only a client (its engine is never started), so 1 and 3 processes are measured
// the same way. The PostgreSQL cost covers the timed part. Also the timed part of a scaling run.
// The runs' workflow ids start with `id_prefix`: a schema measured twice needs another one the
// second time (an id is not reused).
// `workflow`: NoopChain, or another chain of `steps` steps summing 0..steps-1 (InsertChain).
Result run_throughput(const std::string& url, const std::string& schema, int steps, int processes, int workflows,
                      Starts starts, const std::string& id_prefix = "", const std::string& workflow = NoopChain::name);

Result measure_throughput(const std::string& url, int steps, int processes, int workflows, Starts starts);

// Engine throughput over the raw queue's jobs/s (when it ran): 1.0 means a workflow step
// costs what a hand-written queue's job does.
void compare_to_raw_queue(Result& result, std::optional<double> raw_jobs_per_s);

inline constexpr double aim_ratio_to_raw_queue = 1.0;  // for 10-step workflows

void set_raw_queue_aim(Result& result);

// ---- transactional.cpp: transactional steps against no-op ones ------------------------------

inline constexpr double aim_transactional_ratio = 0.8;  // steps/s of InsertChain over NoopChain

// 10-step NoopChain, InsertChain and InsertAloneChain runs, `workflows` of each, one engine
// process, queued first, measured in turns in fresh schemas, twice; the ratios of their steps/s.
Result measure_transactional(const std::string& url, int workflows);

// ---- codec.cpp: the payload codec (issue 20), built when libsodium is found ------------------

inline constexpr double aim_codec_ratio = 0.9;  // steps/s with the SodiumCodec over none

// 10-step NoopChain runs, `workflows` a run, one engine process, queued first, without a codec
// and with the SodiumCodec in turns (which goes first alternates), in fresh schemas, four times;
// the ratio of their steps/s.
Result measure_codec(const std::string& url, int workflows);

// ---- latency.cpp -----------------------------------------------------------------------------

inline constexpr double aim_p50_ms = 5.0;  // idle

// Start-to-result time of 1-step runs, one at a time, on an otherwise idle in-process engine.
Result measure_idle_latency(const std::string& url, int runs);

// The same 1-step start-to-result time while the same engine also runs a steady load of
// 10-step workflows started from another thread.
Result measure_loaded_latency(const std::string& url, int runs);

// Start-to-result times, in ms, of `runs` 1-step runs started one after another, after an
// untimed warm-up (connections, prepared statements).
std::vector<double> time_one_step_runs(durable::Engine& engine, int runs);
// p50, p99, mean and max of `ms` into `result`.
void add_latency_figures(Result& result, std::vector<double> ms);

// ---- pooler.cpp: behind PgBouncer ------------------------------------------------------------

// An in-process engine through a PgBouncer in transaction mode (EngineOptions::pooler_mode, LISTEN
// on the direct URL) beside one connected directly, in turns, twice: the idle 1-step latency of
// `latency_runs` runs and the steps/s of `workflows` 10-step runs started at once.
Result measure_pooler(const std::string& url, int latency_runs, int workflows);

// ---- scaling.cpp: throughput with big tables -------------------------------------------------

// A database state the scaling runs start from: rows loaded into a freshly migrated schema.
struct TableState {
  std::string name;                     // "state" in the JSON
  std::string description;              // for the table
  int rows = 0;                         // tasks queued or workflows completed
  std::vector<std::string> load_sql{};  // in order, for loading_sql (bench_workflows.hpp)
};

// Activity tasks queued for another service: pending, due an hour ago, for an activity and a
// workflow no engine here registers. Each has its parent workflow waiting (running, not
// runnable) for it. A backlog every task claim has to look past.
std::vector<std::string> queued_tasks_sql();

// History: completed 1-step noop_chain runs with every row a real one leaves behind: the
// workflow, its four journal events, its task and the task's attempt.
std::vector<std::string> completed_workflows_sql();

inline constexpr double aim_ratio_to_empty = 0.8;

// 10-step throughput on one engine process, starting from `state`.
Result measure_scaling(const std::string& url, const TableState& state, int workflows);

void compare_to_empty(Result& result, double empty_steps_per_s);

// ---- runs_scale.cpp: the management API with a big history (issue 16) -----------------------

inline constexpr double aim_page_ms = 20.0;           // a page of runs (100), median
inline constexpr double aim_history_ms = 50.0;        // a 1,000-step run's history, median
inline constexpr double aim_console_page_ms = 200.0;  // the console's runs page: its two requests, median
inline constexpr double aim_prune_runs_per_s = 20'000.0;
inline constexpr double aim_ratio_during_prune = 0.8;  // 10-step steps/s while a prune runs, to alone

struct RunsScale {
  int ended_runs = 0;            // 1 % failed, the rest completed, each with a 1-step history
  int running_runs = 0;          // waiting (not runnable): workflows rows only
  int throughput_workflows = 0;  // 10-step runs of each throughput run
};

// Loads the runs, and one completed 1,000-step run, into a fresh schema. On an engine that is
// not started, times list pages, the long run's history and get. Then prunes every ended run
// while a 10-step throughput run goes on in the same schema, and compares that throughput with
// the same run alone just before. Reports one result per figure as soon as it is measured.
void measure_runs(const std::string& url, const RunsScale& scale, const std::function<void(Result)>& report);

// ---- flow.cpp: flow control (issue 37) ------------------------------------------------------

inline constexpr double aim_flow_neighbour_ratio = 2.0;  // tenant b's time behind a's backlog, to alone
inline constexpr double aim_flow_claim_ratio = 0.8;      // steps/s over many keys of a queue, to the default queue

// One engine serving a queue without limits. Tenant b's `small` one-step runs, start to last
// result, alone; then again just after tenant a started `backlog` runs on the same queue.
Result measure_flow_neighbour(const std::string& url, int backlog, int small);

// `runs` one-step runs queued first, then drained by one engine: on the default queue, and on a
// queue spread over `keys` keys, in turns (ABBA); the ratio of their steps/s.
Result measure_flow_claim(const std::string& url, int runs, int keys);

// ---- messages.cpp: talking to a running workflow (issue 17) ---------------------------------

inline constexpr double aim_send_to_receive_p50_ms = 5.0;  // idle

// A workflow blocked in receive() in an engine process of its own; this process sends it
// `messages` messages, one at a time, each once the one before was received. The latency of
// each is its row's received_at - sent_at: the database clock at the send's statement and at the
// statement of the replay commit that received it.
Result measure_send_to_receive(const std::string& url, int messages);

// ---- children.cpp: child workflows (issue 17) -----------------------------------------------

inline constexpr double aim_children_ratio = 0.8;  // children/s to top-level runs/s

// `rounds` rounds on one in-process engine, each: a parent that starts `fan_out` 1-step children
// at once and awaits them all, and `fan_out` 1-step top-level runs started and awaited from
// outside (which goes first alternates). Reports both rates, summed over the rounds.
Result measure_children(const std::string& url, int rounds, int fan_out);

// ---- continue.cpp: continue-as-new (issue 17) --------------------------------------------------

inline constexpr double aim_continue_ratio = 1.2;  // per-step time, 10,000-step loop to 1,000-step loop

// Per-step time of a loop of 10,000 steps against one of 1,000, both continuing as new every 100
// steps, on one in-process engine: flat when each run replays only its own bounded journal.
Result measure_continue(const std::string& url);

// ---- replay.cpp ------------------------------------------------------------------------------

inline constexpr double aim_replay_ratio = 1.2;

// Per-step time of one long sequential run against short ones. Each step replays the
// workflow from the top, so this shows whether replay cost grows with the journal.
Result measure_replay(const std::string& url, int short_runs);

}  // namespace bench
