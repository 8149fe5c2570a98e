#include "pg/statements.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "base/embedded.hpp"
#include "pg/connection_pool.hpp"
#include "pg/records.hpp"
#include "pg/sql_files.hpp"

namespace durable::pg {

std::string wake_channel(const std::string& schema, Wake kind) {
  switch (kind) {
    case Wake::workflows: return "durable_w_" + schema;
    case Wake::tasks: return "durable_t_" + schema;
    case Wake::ended: return "durable_e_" + schema;
    case Wake::schedules: return "durable_s_" + schema;
    case Wake::events: return "durable_v_" + schema;
    case Wake::paused: return "durable_p_" + schema;
  }
  return {};
}

namespace {

using Names = std::map<std::string, std::string, std::less<>>;
// Fragment `name` (src/pg/sql/fragments/), its own {{placeholders}} filled by the names given.
using Fragment = std::function<std::string(const char*, Names)>;

// A file's text without its leading comment lines (they document it, they are not sent) and
// without the whitespace around it.
std::string_view body_of(std::string_view file) {
  std::size_t at = 0;
  while (at < file.size()) {
    const auto line_end = std::min(file.find('\n', at), file.size());
    const auto line = file.substr(at, line_end - at);
    if (line.find_first_not_of(" \t") != std::string_view::npos && !line.starts_with("--")) break;
    at = line_end + 1;
  }
  if (at >= file.size()) return {};
  const auto body = file.substr(at);
  return body.substr(0, body.find_last_not_of(" \t\n") + 1);
}

// The names of the claims' fragments: what a claim may take, and how it leases what it took.
Names claim_names(const Fragment& fragment) {
  // A named queue's claim commits synchronously: a claim lost in a server crash would let its task
  // be claimed again while the body that took it still runs, over the queue's limit.
  auto lease_claimed = [&](const char* owner, const char* margin, const char* token, const char* first_token,
                           bool async) {
    return fragment("lease_claimed",
                    {{"owner", owner},
                     {"margin", margin},
                     {"token", token},
                     {"first_token", first_token},
                     {"async_commit", async ? fragment("async_commit", {}) : "NULL::text AS async_commit"}});
  };
  return {
      {"pending_task", fragment("claimable_pending_task", {})},
      {"expired_task", fragment("claimable_expired_task", {})},
      {"lease_claimed", lease_claimed("$3", "$4", "$5", "$6", true)},
      {"lease_queued", lease_claimed("$4", "$5", "$6", "$7", false)},
      {"record_lost_attempts", fragment("record_lost_attempts", {})},
      {"runnable_workflow", fragment("claimable_runnable_workflow", {})},
      {"waking_workflow", fragment("claimable_waking_workflow", {})},
  };
}

// The names of flow control's fragments (docs/flow-control.md): a queue's windows and turns, for
// runs and for activity attempts.
Names flow_control_names(const Fragment& fragment) {
  return {
      {"run_windows", fragment("queue_windows", {{"queue", "$1"}, {"kind", "NOT l.attempt"}, {"turn", "run_turn"}})},
      {"attempt_windows",
       fragment("queue_windows", {{"queue", "$1"}, {"kind", "l.attempt"}, {"turn", "attempt_turn"}})},
      {"serve_run_turns", fragment("serve_turns", {{"attempt", "false"}, {"turn", "run_turn"}})},
      {"serve_attempt_turns", fragment("serve_turns", {{"attempt", "true"}, {"turn", "attempt_turn"}})},
      {"run_key_turn", fragment("key_turn", {{"attempt", "false"}})},
      {"run_key_room", fragment("key_room", {{"most", "$2"}})},
      {"attempt_key_room", fragment("key_room", {{"most", "$3"}})},
      {"attempt_key_turn", fragment("key_turn", {{"attempt", "true"}})},
      {"rate_frees_at", fragment("rate_frees_at", {})},
      {"key_step", fragment("key_step", {})},
      {"admissible", fragment("admissible_run", {})},
      {"run_aged_priority", fragment("aged_priority", {{"priority", "w.priority"},
                                                       {"since", "greatest(w.created_at, w.admit_after)"},
                                                       {"step_ms", "q.aging_ms"},
                                                       {"top", "(SELECT p FROM top)"}})},
      {"attempt_aged_priority", fragment("aged_priority", {{"priority", "t.priority"},
                                                           {"since", "t.available_at"},
                                                           {"step_ms", "q.aging_ms"},
                                                           {"top", "(SELECT p FROM top)"}})},
      {"line_level",
       fragment("aged_priority",
                {{"priority", "d.priority"}, {"since", "d.head_at"}, {"step_ms", "q.step_ms"}, {"top", "q.top"}})},
      {"line_admissible", fragment("line_admissible", {{"run_key_room", fragment("key_room", {{"most", "$2"}})},
                                                       {"admissible", fragment("admissible_run", {})}})},
  };
}

// What the statements' {{placeholders}} name: the schema `s`, the clock `now`, the stored
// defaults, and the shared fragments, each filled for where it goes.
Names names_for(const std::string& s, const std::string& now) {
  const Names common = {{"s", s},
                        {"now", now},
                        {"default_timeout_ms", std::to_string(stored_default_timeout_ms)},
                        {"default_retry_horizon_ms", std::to_string(stored_default_retry_horizon_ms)},
                        // A whole turn of a queue's keys (key_step.sql): a weight divides it.
                        {"turn_unit", std::to_string(queue_turn_unit)}};
  // Fragment `name` (src/pg/sql/fragments/), its own {{placeholders}} filled by `args`: SQL
  // expressions and CTE names, fixed here.
  auto fragment = [&](const char* name, Names args = {}) {
    args.insert(common.begin(), common.end());
    return detail::render(body_of(detail::embedded_text(statement_files(), std::string("fragments/") + name)), args);
  };
  const char* const orphans_reason = "'its parent run ended (parent-close policy: cancel)'";
  auto insert_tasks = [&](const char* from, const char* tasks, const char* owner, const char* margin,
                          const char* token) {
    return fragment("insert_tasks",
                    {{"from", from}, {"tasks", tasks}, {"owner", owner}, {"margin", margin}, {"token", token}});
  };
  auto request_cancel = [&](const char* from, const char* reason, const char* channel, const char* prefix = "") {
    return fragment("request_cancel", {{"from", from}, {"reason", reason}, {"channel", channel}, {"p", prefix}});
  };
  // commit_replay, with the CTEs for messages, events, children and cancels (`extras`) or without.
  auto replay_commit = [&](std::string extras) {
    return fragment(
        "replay_commit",
        {{"extras", std::move(extras)},
         // The journal grew, or a message came, since the replay read them.
         {"replay_outdated", "(next_seq <> $8 OR ($16::int >= 0 AND messages_sent <> $16::int))"},
         {"drop_unawaited", fragment("drop_unawaited", {{"from", "w"}, {"status", "$4"}, {"except", "NULL::bigint"}})},
         {"more_of_replay", fragment("more_events", {{"events", "$3::jsonb"}, {"skip", "1"}})},
         {"insert_tasks", insert_tasks("w", "$10::jsonb", "$13", "$14", "$15")},
         {"claimed_json", fragment("claimed_json", {{"from", "t"}, {"run", "$1::uuid"}})}});
  };
  const std::string own_children_asked =
      request_cancel("asked", "'its parent run was cancelled (parent-close policy: cancel)'", "$21", "asked_");
  Names names = common;
  names.insert({
      {"replay_commit", replay_commit(fragment("replay_extras", {{"request_own_children", own_children_asked}}))},
      {"replay_commit_plain", replay_commit(fragment("replay_extras_none"))},
      {"fast", fragment("fast")},
      {"replayed_seq", "w.next_seq - w.replay_lag AS replayed_seq"},
      {"start_data", fragment("start_data")},
      {"async_commit", fragment("async_commit")},
      {"insert_tasks_of_steps", insert_tasks("k", "f.tasks", "$2", "$3", "f.claim_token")},
      {"insert_tasks_of_start", insert_tasks("w", "$25::jsonb", "$7", "$26", "$27")},
      {"claimed_json_of_start", fragment("claimed_json", {{"from", "t"}, {"run", "$2::uuid"}})},
      {"claimed_json_of_steps", fragment("claimed_json", {{"from", "nt"}, {"run", "w.run_id"}})},
      {"holder_live", fragment("holder_live")},
      {"drop_unawaited_of_steps",
       fragment("drop_unawaited", {{"from", "k"}, {"status", "f.wf_status"}, {"except", "f.task_id"}})},
      {"finishing_task", fragment("finishing_task")},
      {"finished_task", fragment("finished_task")},
      {"more_of_start", fragment("more_events", {{"events", "$19::jsonb"}, {"skip", "1"}})},
      {"more_of_steps", fragment("more_events", {{"events", "w.events"}, {"skip", "0"}})},
      {"cancel_one",
       fragment("cancel_runs", {{"from", "r"}, {"data", "jsonb_build_object('terminated', true)"}, {"channel", "$2"}})},
      {"cancel_queued", fragment("cancel_runs", {{"from", "r"},
                                                 {"data",
                                                  "jsonb_build_object('error_type', 'durable::WorkflowCancelled', "
                                                  "'error_message', 'cancelled while queued: its code never ran')"},
                                                 {"channel", "$4"}})},
      {"request_one", request_cancel("r", "$2::text", "$3")},
      {"request_children", request_cancel("r", orphans_reason, "$2")},
      {"request_orphans", request_cancel("r", orphans_reason, "$1")},
      {"orphan", fragment("orphan")},
      {"run_summary_columns", fragment("run_summary_columns")},
      {"run_info_columns", fragment("run_info_columns")},
      {"run_filter", fragment("run_filter")},
      {"due_runs", fragment("due_runs")},
      {"advance_clock", fragment("move_clock", {{"skew", "skew + $1::bigint * interval '1 millisecond'"}})},
      {"set_clock",
       fragment("move_clock", {{"skew", "timestamptz 'epoch' + $1::bigint * interval '1 microsecond' - now()"}})},
  });
  const Fragment with_args = [&](const char* name, Names args) { return fragment(name, std::move(args)); };
  names.merge(claim_names(with_args));
  names.merge(flow_control_names(with_args));
  return names;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> statement_texts(const std::string& schema) {
  // db_now(), read once per statement into a first CTE; each use is a cheap scan of that one row.
  // A call to the SQL function itself is planned again on every execution (about 50 us each), and
  // a subquery on the clock table per use costs a table scan each (a step statement has ~20 uses).
  // The statements read the time with statement_timestamp(), not now(): the same in a statement of
  // its own, but a transactional activity's step commits at the end of the body's transaction,
  // and now() is when that began (its leases and times must be judged as the step commits).
  const std::string s = quoted(schema);
  const std::string now = "(SELECT now FROM clock_now)";
  const std::string clock_cte =
      "clock_now AS MATERIALIZED (SELECT statement_timestamp() + skew AS now FROM " + s + ".clock)";
  auto with_clock = [&](std::string sql) {
    if (sql.find(now) == std::string::npos) return sql;
    if (sql.starts_with("WITH RECURSIVE ")) return sql.insert(15, clock_cte + ",\n");
    if (sql.starts_with("WITH ")) return sql.insert(5, clock_cte + ",\n");
    return "WITH " + clock_cte + "\n" + sql;
  };
  const Names names = names_for(s, now);
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& file : statement_files()) {
    if (file.name.starts_with("fragments/")) continue;
    texts.emplace_back(std::string(file.name), with_clock(detail::render(body_of(file.text), names)));
  }
  return texts;
}

void prepare_statements(pqxx::connection& conn, const std::string& schema, const std::vector<std::string>& only,
                        const std::string& name_prefix) {
  for (const auto& [name, text] : statement_texts(schema)) {
    if (only.empty() || std::find(only.begin(), only.end(), name) != only.end()) {
      conn.prepare(name_prefix + name, text);
    }
  }
}

}  // namespace durable::pg

namespace durable::pg {

std::shared_ptr<const StatementTexts> statement_text_map(const std::string& schema) {
  auto texts = std::make_shared<StatementTexts>();
  for (auto& [name, text] : statement_texts(schema)) texts->emplace(std::move(name), std::move(text));
  return texts;
}

namespace {
// The innermost UnpreparedScope of this thread.
thread_local const pqxx::connection_base* unprepared_conn = nullptr;
thread_local const StatementTexts* unprepared_texts = nullptr;
}  // namespace

UnpreparedScope::UnpreparedScope(const pqxx::connection_base& conn, const StatementTexts* texts)
    : previous_conn_(std::exchange(unprepared_conn, &conn)), previous_texts_(std::exchange(unprepared_texts, texts)) {}

UnpreparedScope::~UnpreparedScope() {
  unprepared_conn = previous_conn_;
  unprepared_texts = previous_texts_;
}

const std::string* unprepared_text(const pqxx::transaction_base& tx, const char* name) {
  if (unprepared_texts == nullptr || &tx.conn() != unprepared_conn) return nullptr;
  const auto found = unprepared_texts->find(name);
  if (found == unprepared_texts->end()) throw std::logic_error(std::string("no statement named ") + name);
  return &found->second;
}

}  // namespace durable::pg
