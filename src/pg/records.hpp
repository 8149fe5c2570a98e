// Typed records between replay and storage: what a replay commits,
// and the rows the engine claims and reads (filled by column name in pg/rows.cpp). JSON is left
// for user payloads and event data. No libpqxx here: the layers above include this.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/resolved_options.hpp"
#include "durable/detail/payload.hpp"
#include "durable/options.hpp"
#include "journal/events.hpp"

namespace durable::pg {

// The journal's vocabulary (journal/events.hpp), as storage's own code names it.
using journal::event_kind_from_text;
using journal::EventKind;
using journal::run_status_from_text;
using journal::RunStatus;
using journal::task_status_from_text;
using journal::TaskStatus;
using journal::to_text;

// A task's options as the tasks table and its scheduled event store them (json): only what
// differs from the stored defaults below.
Json options_to_json(const detail::ResolvedActivityOptions& options);
detail::ResolvedActivityOptions options_from_json(const Json& json);

// The option values a stored row leaves out. Pinned, not the public defaults: rows written
// under them must read the same after a release changes those. The statements read the two
// durations with these as their fallback.
inline constexpr std::int64_t stored_default_timeout_ms = 30'000;
inline constexpr std::int64_t stored_default_retry_horizon_ms = 86'400'000;
inline constexpr int stored_default_max_attempts = 1;
inline constexpr std::int64_t stored_default_base_ms = 0;
inline constexpr std::int64_t stored_default_max_backoff_ms = 60'000;
inline constexpr double stored_default_jitter = 0.0;

// A whole turn of a queue's keys, in the units turns are stored in (migration 21): a key of
// weight w moves on by a w-th of it with each run or task served (QueueSpec::key_weights).
inline constexpr std::int64_t queue_turn_unit = 1'000'000;

// Idempotency keys are any bytes: JSON carries them as lowercase hex.
std::string hex_of(const std::string& bytes);

// An event a replay appends to the journal (its seq is given at commit).
struct NewEvent {
  EventKind kind;
  int step = -1;     // the code's call it records; -1 for the run's own events
  std::string name;  // activity name, "now" / "uuid" for side effects, empty otherwise
  Json data = Json::object();
};

// A child run a replay starts (start_child), inserted with the commit. `replaceable`: the statuses
// of an earlier run under its id that its id-reuse policy lets it replace.
struct NewChild {
  int step = 0;
  std::string workflow_id, run_id, name;
  Json input;
  std::string parent_close;  // "cancel" or "abandon"
  int depth = 1;
  std::vector<std::string> replaceable;
};

// The latest run of a child id as a replay read it before starting a child under it.
struct TakenId {
  std::string run_id;
  RunStatus status = RunStatus::running;
};

// An activity task a replay schedules. `claim`: lease it at once to the committing engine.
struct NewTask {
  int step = 0;
  std::string name;
  Json input;
  detail::ResolvedActivityOptions options;
  bool claim = false;
  // Its run ended without awaiting it: written cancelled, never run, so that a resume of the run
  // finds the task to schedule again.
  bool dropped = false;
};

// What a store write found when it re-read after an unknown outcome, or at once.
enum class FinishOutcome { committed, committed_earlier, fenced_off };
enum class RetryOutcome { retried, past_horizon, fenced_off };
enum class HeartbeatOutcome { kept, lease_lost, cancelled };

struct ClaimedWorkflow {
  std::string workflow_id, run_id, name;
  int next_seq = 0;
  std::int64_t lease_token = 0;
  std::int64_t now_us = 0;  // the database clock at the claim
  // The data of its workflow_started event when that is the whole journal (a fresh run), so the
  // first replay needs no read of the journal.
  std::optional<Json> start_data;
  int replayed_seq = 0;  // the journal length its last committed replay had read
};

struct JournalEvent {
  int seq = 0;
  EventKind kind = EventKind::workflow_started;
  int step = -1;
  std::string name;
  Json data;
};

// A run's journal from some event on, with the workflow id and name it belongs to (read in one
// snapshot). `run_id` is empty when there is no such run.
struct JournalRead {
  std::string workflow_id;
  std::string run_id;
  std::string name;
  int replayed_seq = 0;  // the journal length its last committed replay had read
  std::vector<JournalEvent> events;
};

struct ReplayCommit {
  std::string workflow_id;  // for messages
  // The journal length the replay took the last committed one to have read (what it logged
  // depends on it): continuing in place commits only while the run still says so.
  int replayed_seq = 0;
  std::string run_id;
  std::int64_t lease_token = 0;
  std::vector<NewEvent> events;
  RunStatus status = RunStatus::running;
  Json result;  // null unless completed
  std::string error_type, error_message;
  int seen_seq = 0;              // the journal length the replay saw
  std::int64_t wake_at_us = -1;  // earliest pending timer, -1 for none
  std::vector<NewTask> tasks;    // those marked claim are leased to claim_owner at once
  std::string claim_owner;       // who runs the tasks marked claim (this engine)
  std::string claim_token;       // marks them, so a retry after a lost answer finds them
  Duration lease_margin{0};
  int seen_messages = -1;                     // the run's messages_sent when the replay read its inbox; -1: it did not
  std::vector<std::pair<int, int>> received;  // the inbox messages it received: [seq, step]
  Json published = Json::array();             // the events it set, the last per key: [key, value, step]
  // The children it starts. Their ids were read free (or replaceable): if one was taken since,
  // the statement refuses the whole commit (ChildIdTaken) and the replay is decided again.
  std::vector<NewChild> children;
  std::vector<int> dropped;      // steps whose tasks it drops: the cancel it delivered dropped them
  bool delivers_cancel = false;  // it delivered a cancel: its children under the cancel policy are asked
  // When it continues as new (status continued): the next run, inserted in the same transaction.
  std::string next_run_id;
  Json next_input;
};

// An unreceived message of a run's inbox.
struct InboxMessage {
  int seq = 0;               // per run, in send order
  std::int64_t sent_us = 0;  // the database clock at the send (the one deadlines are judged by)
  std::string message_id;
  Json payload;
};

// A run's published event as read_event found it: the run's status, and the value if one is set.
struct EventRead {
  std::optional<RunStatus> status;  // nullopt: no such run
  std::optional<Json> value;
};

// What send_message did. `status` is the id's latest run's; nullopt when the id has none.
struct SendOutcome {
  std::optional<RunStatus> status;
  bool sent = false;
  std::string existing_id;  // the message an idempotency key already sent (nothing was written)
};

struct ClaimedTask {
  std::int64_t task_id = 0;
  std::string run_id;  // the run that scheduled it
  std::string workflow_id;
  int step = 0;
  std::string name;
  Json input;
  detail::ResolvedActivityOptions options;
  int attempt = 0;       // attempts started, counting those before a resume (attempts rows are numbered so)
  int attempt_base = 0;  // attempts started before the run was last resumed
  // The attempt as its retry policy counts it (1 for the first after a resume) and the body sees it.
  int policy_attempt() const { return attempt - attempt_base; }
  std::int64_t lease_token = 0;
  std::int64_t claimed_at_us = 0;  // the database clock when it was leased to this engine
  std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();  // ... and ours
  std::int64_t first_started_at_us = 0;  // when its first attempt started (the retry horizon counts from it)
  bool after_lease_expiry = false;       // the previous attempt's worker lost its lease ...
  std::int64_t lease_lost_at_us = 0;     // ... at this time (the database clock)
  Json last_heartbeat;                   // details of the latest heartbeat of any earlier attempt, or null
  bool leased_at_once = false;           // by the commit that created it, not by a claim
  int handovers = 0;                     // steps before it, in a row, that passed their slot on to the next
  // Why its input or heartbeat details did not decode (EngineOptions::codec): the attempt fails
  // with durable::CodecError instead of running. Empty: decoded.
  std::string undecodable;
  // ... because this engine's codec lacks their key (UnknownCodecKey): another engine may have it,
  // so the attempt is blocked (handed back, its run marked blocked), never failed.
  bool key_unknown = false;
};

// What a replay commit wrote.
struct ReplayOutcome {
  std::optional<int> base;           // seq of its first event; nullopt when its lease was lost (nothing written)
  std::vector<ClaimedTask> claimed;  // its tasks leased to this engine in the same commit
  std::int64_t now_us = 0;           // the database clock at the commit
  // Refused, nothing written: a child's id was taken since it was read, or the journal of a run
  // continuing as new grew. Read again and decide again.
  bool refused = false;
};

// What finishing a task together with the replay it unblocks wrote.
struct StepOutcome {
  FinishOutcome finish = FinishOutcome::fenced_off;
  bool continued = false;            // the replay was committed too
  std::optional<int> base;           // seq of the task's outcome event (when continued)
  std::vector<ClaimedTask> claimed;  // the replay's tasks leased to this engine
  std::int64_t now_us = 0;
};

// A finished task to commit with complete_steps, and the replay its outcome unblocks, if any.
struct StepCommit {
  const ClaimedTask* task = nullptr;
  bool succeeded = false;
  Json result;
  std::string error_type, error_message;
  bool record_attempt = true;            // false: the attempt was recorded already (a lost lease)
  const ReplayCommit* replay = nullptr;  // computed for `expected_seq` events of run `run_id`, plus this outcome
  int expected_seq = -1;
  std::string run_id;
};

// How a run was started (workflows.started_by), and by which schedule or trigger (origin).
struct RunOrigin {
  std::string started_by = "call";
  std::string origin;
  // Where it waits for its turn (durable/queues.hpp): on a named queue it starts queued.
  std::string queue = "default";
  std::string concurrency_key;
  int priority = 0;
  std::string deduplication_key, debounce_key;  // empty: none
  Duration debounce{0};
  bool debounce_keeps_first = false;  // the first start's input stays
};

// A run a start found in its way: its id's, or its deduplication or debounce key's.
struct FoundRun {
  std::string workflow_id, run_id, status;
};

struct WorkflowRow {
  std::string workflow_id, run_id, name;
  RunStatus status = RunStatus::running;
  Json result;
  std::string error_type, error_message;
};

}  // namespace durable::pg
