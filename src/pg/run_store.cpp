#include "pg/run_store.hpp"

#include <fmt/format.h>

#include "base/uuid.hpp"
#include "pg/audit.hpp"
#include "pg/connection_pool.hpp"
#include "pg/database.hpp"
#include "pg/records.hpp"
#include "pg/rows.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

namespace {

constexpr int prune_batch = 1000;  // runs per transaction

TimePoint time_of(std::int64_t us) { return TimePoint{std::chrono::microseconds{us}}; }
std::optional<TimePoint> time_or_none(const pqxx::field& field) {
  if (field.is_null()) return std::nullopt;
  return time_of(field.as<std::int64_t>());
}
std::int64_t us_of(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

WorkflowStatus public_status(const std::string& text) {
  switch (run_status_from_text(text)) {
    case RunStatus::running: return WorkflowStatus::running;
    case RunStatus::completed: return WorkflowStatus::completed;
    case RunStatus::failed: return WorkflowStatus::failed;
    case RunStatus::cancelled: return WorkflowStatus::cancelled;
    case RunStatus::continued: return WorkflowStatus::continued;
  }
  return WorkflowStatus::running;
}

StartedBy started_by_from_text(const std::string& text) {
  for (StartedBy s : {StartedBy::call, StartedBy::schedule, StartedBy::trigger, StartedBy::fork, StartedBy::child,
                      StartedBy::continued}) {
    if (to_string(s) == text) return s;
  }
  throw Error(fmt::format("unknown started_by '{}' in the workflows table", text));
}

// The LIKE pattern matching ids that start with `prefix`, its wildcards escaped.
std::string prefix_pattern(const std::string& prefix) {
  std::string out;
  for (char c : prefix) {
    if (c == '%' || c == '_' || c == '\\') out += '\\';
    out += c;
  }
  return out + '%';
}

void read_summary(const pqxx::row& row, RunSummary& r) {
  r.workflow_id = row["workflow_id"].as<std::string>();
  r.run_id = row["run_id"].as<std::string>();
  r.workflow_name = row["name"].as<std::string>();
  r.status = public_status(row["status"].as<std::string>());
  r.latest = row["latest"].as<bool>();
  r.started_by = started_by_from_text(row["started_by"].as<std::string>());
  r.origin = row["origin"].as<std::string>();
  r.app_version = row["app_version"].as<std::string>();
  r.blocked = row["blocked"].as<bool>();
  r.created_at = time_of(row["created_us"].as<std::int64_t>());
  r.updated_at = time_of(row["updated_us"].as<std::int64_t>());
  r.ended_at = time_or_none(row["ended_us"]);
}

RunInfo read_info(const pqxx::row& row) {
  RunInfo r;
  read_summary(row, r);
  r.input = rows::json_or_null(row, "input");
  r.result = rows::json_or_null(row, "result");
  r.error_type = row["error_type"].as<std::string>();
  r.error_message = row["error_message"].as<std::string>();
  r.journal_length = row["next_seq"].as<int>();
  r.activities = row["activities"].as<int>();
  r.attempts = row["attempts"].as<int>();
  r.failed_attempts = row["failed_attempts"].as<int>();
  r.parent_run_id = row["parent_run_id"].as<std::string>();
  r.forked_from_run = row["forked_from_run"].as<std::string>();
  r.forked_from_step = row["forked_from_step"].as<int>();
  r.continued_from_run = row["continued_from"].as<std::string>();
  r.continued_as_run = row["continued_as"].as<std::string>();
  if (r.blocked) {
    const Json b = rows::json_or_null(row, "blocked_by");
    BlockedRun& blocked = r.blocked_by.emplace();
    blocked.divergence = {b.value("step", -1), b.value("journaled", ""), b.value("asked", ""), b.value("message", "")};
    blocked.app_version = b.value("app_version", "");
    blocked.times = b.value("times", 0);
    r.blocked_at = time_or_none(row["blocked_us"]);
  }
  return r;
}

// The filter as bound to fragments/run_filter.sql's $1 to $12, each unset condition NULL.
struct FilterParams {
  std::optional<std::string> statuses;  // a text array
  std::optional<std::string> workflow_name, id_pattern;
  std::optional<std::int64_t> created_from, created_until, ended_from, ended_until;
  std::optional<std::string> schedule_id, trigger, parent_run_id, app_version;
  bool blocked_only = false;
};

FilterParams params_of(const RunFilter& f, bool with_statuses) {
  FilterParams p;
  if (with_statuses && !f.statuses.empty()) {
    std::string array;  // status names are fixed words: no quoting needed in the array literal
    for (WorkflowStatus st : f.statuses) array += (array.empty() ? "" : ",") + std::string(to_string(st));
    p.statuses = "{" + array + "}";
  }
  auto text = [](const std::string& v) { return v.empty() ? std::nullopt : std::optional<std::string>(v); };
  auto us = [](const std::optional<TimePoint>& t) { return t ? std::optional<std::int64_t>(us_of(*t)) : std::nullopt; };
  p.workflow_name = text(f.workflow_name);
  if (!f.id_prefix.empty()) p.id_pattern = prefix_pattern(f.id_prefix);
  p.created_from = us(f.created_from);
  p.created_until = us(f.created_until);
  p.ended_from = us(f.ended_from);
  p.ended_until = us(f.ended_until);
  p.schedule_id = text(f.schedule_id);
  p.trigger = text(f.trigger);
  p.parent_run_id = text(f.parent_run_id);
  p.app_version = f.app_version;
  p.blocked_only = f.blocked_only;
  return p;
}

// Runs `statement` with the filter as its $1 to $12, then `more`.
template <typename... More>
pqxx::result exec_filtered(pqxx::transaction_base& tx, const char* statement, const FilterParams& p,
                           const More&... more) {
  return tx.exec_prepared(statement, p.statuses, p.workflow_name, p.id_pattern, p.created_from, p.created_until,
                          p.ended_from, p.ended_until, p.schedule_id, p.trigger, p.parent_run_id, p.app_version,
                          p.blocked_only, more...);
}

// A filtered read plans with its values (for this transaction only; the session plans its step
// statements once, generic): a generic plan keeps every `$n IS NULL` test and cannot turn an id
// prefix into an index range.
void plan_with_values(pqxx::transaction_base& tx) { tx.exec0("SET LOCAL plan_cache_mode = force_custom_plan"); }

// After `deleted` (rows of prune_runs or delete_run): deletes the history of those runs, and an
// id that lost its latest run gets its newest remaining run as the latest. Returns the runs
// deleted. A run changed meanwhile (resumed, and maybe ended again) was checked again as its row
// was reached; its history goes in a second statement, whose snapshot sees everything written
// before its row was deleted. Nothing adds to the history of a run whose row is gone.
std::int64_t delete_history(pqxx::transaction_base& tx, const pqxx::result& deleted) {
  if (deleted.empty()) return 0;
  Json runs = Json::array();
  for (const auto& row : deleted) runs.push_back(row["run_id"].as<std::string>());
  tx.exec_prepared0(stmt::delete_history, runs.dump());
  Json orphaned = Json::array();
  for (const auto& row : deleted) {
    if (row["latest"].as<bool>()) orphaned.push_back(row["workflow_id"].as<std::string>());
  }
  // The newest remaining run of each id becomes its latest (most pruned ids have none left). A
  // concurrent delete of the chosen run makes the update skip it once that delete commits: then
  // the next round, with a newer snapshot, takes the next newest.
  while (!orphaned.empty()) {
    const auto round = tx.exec_prepared1(stmt::promote_latest, orphaned.dump());
    orphaned = Json::parse(round["skipped"].c_str());
  }
  return static_cast<std::int64_t>(deleted.size());
}

}  // namespace

RunStore::RunStore(ConnectionPool& pool, detail::Sealer sealer)
    : pool_(pool),
      seal_(std::move(sealer)),
      workflows_channel_(wake_channel(pool.schema(), Wake::workflows)),
      tasks_channel_(wake_channel(pool.schema(), Wake::tasks)),
      ended_channel_(wake_channel(pool.schema(), Wake::ended)) {}

RunPage RunStore::list(const RunFilter& filter, int limit, std::optional<std::int64_t> cursor_us,
                       const std::string& cursor_run) {
  RunPage page;
  pool_.read([&](pqxx::connection& conn) {
    page = {};
    pqxx::read_transaction tx(conn);  // plan_with_values is transaction-local
    plan_with_values(tx);
    std::optional<std::string> run;
    if (cursor_us) run = cursor_run;
    auto rows = exec_filtered(tx, stmt::list_runs, params_of(filter, true), cursor_us, run, limit + 1);
    for (const auto& row : rows) {
      if (static_cast<int>(page.runs.size()) == limit) {
        const RunSummary& last = page.runs.back();
        page.next_cursor = fmt::format("{}.{}", us_of(last.created_at), last.run_id);
        break;
      }
      read_summary(row, page.runs.emplace_back());
    }
  });
  return page;
}

std::map<WorkflowStatus, std::int64_t> RunStore::count_by_status(const RunFilter& filter, std::int64_t at_most) {
  std::map<WorkflowStatus, std::int64_t> counts;
  pool_.read([&](pqxx::connection& conn) {
    counts.clear();
    pqxx::read_transaction tx(conn);  // plan_with_values is transaction-local
    plan_with_values(tx);
    const FilterParams params = params_of(filter, false);
    const auto rows = at_most == 0 ? exec_filtered(tx, stmt::count_runs, params)
                                   : exec_filtered(tx, stmt::count_runs_at_most, params, at_most + 1);
    for (const auto& row : rows) {
      if (const auto n = row["n"].as<std::int64_t>(); n > 0) counts[public_status(row["status"].as<std::string>())] = n;
    }
  });
  return counts;
}

Stats RunStore::stats() {
  Stats st;
  pool_.read([&](pqxx::connection& conn) {
    st = {};
    // One snapshot for every figure (repeatable read), at the schema's clock (moved by the test kit's
    // time skipping).
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx(conn);
    st.at = time_of(tx.exec_prepared1(stmt::stats_now)["now_us"].as<std::int64_t>());
    for (const auto& row : tx.exec_prepared(stmt::stats_runs)) {
      st.runs_by_status[public_status(row["status"].as<std::string>())] = row["n"].as<std::int64_t>();
      st.blocked += row["blocked"].as<std::int64_t>();
    }
    auto oldest = tx.exec_prepared(stmt::stats_oldest_running);
    if (!oldest.empty()) read_summary(oldest[0], st.oldest_running.emplace());
    // Ready: what a claim would take (due, or its attempt's lease ran out), as the queue-age gauge reads it.
    for (const auto& row : tx.exec_prepared(stmt::stats_activity_queues)) {
      st.activity_queues.push_back({row["name"].as<std::string>(), row["ready"].as<std::int64_t>(),
                                    row["delayed"].as<std::int64_t>(), row["running"].as<std::int64_t>(),
                                    row["oldest"].as<double>()});
    }
    // Waiting: what a runner would claim (runnable, or its timer came due), unleased.
    for (const auto& row : tx.exec_prepared(stmt::stats_workflow_queues)) {
      st.workflow_queues.push_back(
          {row["name"].as<std::string>(), row["waiting"].as<std::int64_t>(), row["oldest"].as<double>()});
    }
    for (const auto& row : tx.exec_prepared(stmt::stats_instances)) {
      InstanceStats& i = st.instances.emplace_back();
      i.owner = row["owner"].as<std::string>();
      i.instance = row["instance"].as<std::string>();
      i.app_version = row["app_version"].as<std::string>();
      i.activity_capacity = row["activity_capacity"].as<int>();
      i.workflow_capacity = row["workflow_capacity"].as<int>();
      i.activities_leased = row["leased"].as<std::int64_t>();
      if (i.activity_capacity > 0) i.saturation = static_cast<double>(i.activities_leased) / i.activity_capacity;
      i.started_at = time_or_none(row["started_us"]);
      i.seen_at = time_or_none(row["seen_us"]);
      i.alive = row["alive"].as<bool>();
    }
  });
  return st;
}

std::optional<RunInfo> RunStore::get(const std::string& run_id) {
  std::optional<RunInfo> info;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    auto rows = tx.exec_prepared(stmt::read_run_info, run_id);
    info.reset();
    if (rows.empty()) return;
    info = read_info(rows[0]);
    info->input = seal_.open(std::move(info->input), "a workflow's input");
    info->result = seal_.open(std::move(info->result), "a workflow's result");
    info->error_message = seal_.open_text(std::move(info->error_message), "a workflow's error message");
  });
  return info;
}

bool RunStore::exists(const std::string& run_id) {
  if (!detail::is_uuid(run_id)) return false;
  bool found = false;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    found = !tx.exec_prepared(stmt::run_exists, run_id).empty();
  });
  return found;
}

std::optional<RunInfo> RunStore::latest(const std::string& workflow_id) {
  std::string run_id;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    auto found = tx.exec_prepared(stmt::read_workflow, workflow_id);
    run_id = found.empty() ? std::string() : found[0]["run_id"].as<std::string>();
  });
  if (run_id.empty()) return std::nullopt;
  return get(run_id);  // a run deleted in between is not found
}

History RunStore::history(const std::string& run_id, int from_seq, int limit) {
  History h;
  pool_.read([&](pqxx::connection& conn) {
    h = {};
    pqxx::nontransaction tx(conn);
    auto events = tx.exec_prepared(stmt::history_events, run_id, from_seq, limit + 1);
    std::string steps;  // of the activities these events schedule, as a Postgres array
    for (const auto& row : events) {
      if (static_cast<int>(h.events.size()) == limit) {
        h.next_seq = row["seq"].as<int>();
        break;
      }
      HistoryEvent& e = h.events.emplace_back();
      e.seq = row["seq"].as<int>();
      e.kind = row["kind"].as<std::string>();
      e.step = row["step"].as<int>();
      e.name = row["name"].as<std::string>();
      e.at = time_of(row["at_us"].as<std::int64_t>());
      e.data = Json::parse(row["data"].c_str());
      seal_.open_fields(e.data, "a journal event's data");
      if (e.kind == to_text(EventKind::activity_scheduled))
        steps += (steps.empty() ? "" : ",") + std::to_string(e.step);
    }
    if (steps.empty()) return;
    auto attempts = tx.exec_prepared(stmt::history_attempts, run_id, "{" + steps + "}", from_seq);
    for (const auto& row : attempts) {
      ActivityAttempt& a = h.attempts.emplace_back();
      a.step = row["step"].as<int>();
      a.activity = row["name"].as<std::string>();
      a.attempt = row["attempt"].as<int>();
      a.started_at = time_or_none(row["started_us"]);
      a.ended_at = time_or_none(row["ended_us"]);
      a.outcome = row["outcome"].as<std::string>();
      a.error_type = row["error_type"].as<std::string>();
      a.error_message = seal_.open_text(row["error_message"].as<std::string>(), "an attempt's error message");
      a.retry_at = time_or_none(row["retry_us"]);
    }
  });
  return h;
}

std::vector<AuditEntry> RunStore::audit(int limit, std::optional<std::int64_t> before) {
  std::vector<AuditEntry> entries;
  pool_.read([&](pqxx::connection& conn) {
    entries.clear();
    pqxx::nontransaction tx(conn);
    for (const auto& row : tx.exec_prepared(stmt::audit_page, before.value_or(INT64_MAX), limit)) {
      AuditEntry& e = entries.emplace_back();
      e.id = row["audit_id"].as<std::int64_t>();
      e.at = time_of(row["at_us"].as<std::int64_t>());
      e.actor = row["actor"].as<std::string>();
      e.action = row["action"].as<std::string>();
      e.reason = seal_.open_text(row["reason"].as<std::string>(), "an audit entry's reason");
      e.workflow_id = row["workflow_id"].as<std::string>();
      e.run_id = row["run_id"].as<std::string>();
      e.details = Json::parse(row["details"].c_str());
    }
  });
  return entries;
}

bool RunStore::request_cancel(const std::string& run_id, const OperatorAction& action) {
  bool running = false;
  const std::string action_id = detail::random_uuid();
  pool_.write("request_cancel_audited", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    auto row = tx.exec_prepared1(stmt::request_cancel, run_id, seal_.seal_text(action.reason), workflows_channel_);
    running = rows::cancel_asked(tx, run_id, row);
    if (row["requested"].as<int>() == 0) {
      // Asked before (by an earlier try whose answer was lost, perhaps), or ended since.
      running = running || (maybe_committed && audited(tx, action_id).has_value());
      return;
    }
    auto wf = tx.exec_prepared1(stmt::read_run, run_id);
    insert_audit(tx, seal_, action, action_id, "cancel", wf["workflow_id"].as<std::string>(), run_id, Json::object());
    tx.commit();
  });
  return running;
}

bool RunStore::terminate(const std::string& run_id, const OperatorAction& action) {
  bool terminated = false;
  const std::string action_id = detail::random_uuid();
  pool_.write("terminate_run_audited", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    auto row = tx.exec_prepared1(stmt::cancel_workflow, run_id, ended_channel_);
    terminated = row["cancelled"].as<int>() == 1;
    if (!terminated) {
      terminated = maybe_committed && audited(tx, action_id).has_value();
      return;
    }
    auto wf = tx.exec_prepared1(stmt::read_run, run_id);
    insert_audit(tx, seal_, action, action_id, "terminate", wf["workflow_id"].as<std::string>(), run_id,
                 Json::object());
    tx.commit();
  });
  return terminated;
}

bool RunStore::remove(const std::string& run_id, const OperatorAction& action) {
  bool removed = false;
  const std::string action_id = detail::random_uuid();
  pool_.write("delete_run", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    auto wf = tx.exec_prepared(stmt::read_run, run_id);
    if (wf.empty()) {
      removed = maybe_committed && audited(tx, action_id).has_value();  // an earlier try deleted it
      return;
    }
    const std::string workflow_id = wf[0]["workflow_id"].as<std::string>();
    removed = delete_history(tx, tx.exec_prepared(stmt::delete_run, run_id)) == 1;
    if (!removed) return;  // running: nothing written
    insert_audit(tx, seal_, action, action_id, "delete", workflow_id, run_id,
                 {{"status", wf[0]["status"].as<std::string>()}});
    tx.commit();
  });
  return removed;
}

std::int64_t RunStore::db_now_us() { return pg::db_now_us(pool_); }

PruneOutcome RunStore::prune(std::int64_t ended_before_us, const OperatorAction& action, bool dry_run, bool exclusive) {
  PruneOutcome outcome;
  if (dry_run) {
    pool_.read([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      outcome.runs = tx.exec_prepared1(stmt::count_due_runs, ended_before_us)[0].as<std::int64_t>();
      outcome.batches = static_cast<int>((outcome.runs + prune_batch - 1) / prune_batch);
    });
    return outcome;
  }
  // One audit entry, written with the first batch that deletes anything and counting every batch
  // in the batch's own transaction: what is deleted is accounted for, even if the prune stops half way.
  std::int64_t audit_id = 0;
  const std::string action_id = detail::random_uuid();
  for (;;) {
    std::int64_t deleted = 0;
    bool locked = true;
    bool due_left = false;  // nothing deleted, yet runs are due: a concurrent prune took them
    pool_.write("prune_batch", [&](pqxx::connection& conn, bool maybe_committed) {
      pqxx::work tx(conn);
      deleted = 0;
      // After a lost answer, the entry says whether that batch went in: it counted what it deleted.
      if (const auto done = maybe_committed ? audited(tx, action_id) : std::nullopt) {
        deleted = done->at("runs").get<std::int64_t>() - outcome.runs;
        if (deleted > 0) return;
      }
      if (exclusive) {
        locked = tx.exec_params1("SELECT pg_try_advisory_xact_lock(hashtextextended('durable.retention:' || $1, 0))",
                                 pool_.schema())[0]
                     .as<bool>();
        if (!locked) return;  // another engine prunes now
      }
      // The oldest due runs (a batch a concurrent prune took is waited for, then found gone).
      deleted = delete_history(tx, tx.exec_prepared(stmt::prune_runs, ended_before_us, prune_batch));
      if (deleted == 0) {
        due_left = !tx.exec_prepared(stmt::any_due_run, ended_before_us).empty();
        return;
      }
      // After a lost answer the entry may not exist: then this batch starts a new one.
      const bool counted = audit_id != 0 && !tx.exec_prepared(stmt::count_in_audit, audit_id, deleted).empty();
      if (!counted) {
        audit_id = insert_audit(tx, seal_, action, action_id, "prune", "", "",
                                {{"ended_before_us", ended_before_us}, {"runs", deleted}});
      }
      tx.commit();
    });
    if (!locked || (deleted == 0 && !due_left)) break;
    if (deleted == 0) continue;
    outcome.runs += deleted;
    ++outcome.batches;
  }
  return outcome;
}

std::int64_t RunStore::expire_idempotency_results(std::int64_t created_before_us, const OperatorAction& action) {
  std::int64_t expired = 0;
  const std::string action_id = detail::random_uuid();
  pool_.write("expire_idempotency_results", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    if (maybe_committed) {
      if (auto done = audited(tx, action_id)) {  // an earlier try went in
        expired = done->at("results").get<std::int64_t>();
        return;
      }
    }
    expired = static_cast<std::int64_t>(tx.exec_prepared(stmt::expire_idempotent_results, created_before_us).size());
    insert_audit(tx, seal_, action, action_id, "expire_idempotency_results", "", "",
                 {{"created_before_us", created_before_us}, {"results", expired}});
    tx.commit();
  });
  return expired;
}

bool RunStore::unblock(const std::string& run_id, const OperatorAction& action) {
  bool unblocked = false;
  const std::string action_id = detail::random_uuid();
  pool_.write("unblock_run", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    auto run = tx.exec_prepared(stmt::unblock_run, run_id);
    if (run.empty()) {
      unblocked = maybe_committed && audited(tx, action_id).has_value();
      return;
    }
    insert_audit(tx, seal_, action, action_id, "resume", run[0]["workflow_id"].as<std::string>(), run_id,
                 {{"blocked", Json::parse(run[0]["blocked"].c_str())}});
    tx.exec_params("SELECT pg_notify($1, '')", workflows_channel_);
    unblocked = true;
    tx.commit();
  });
  return unblocked;
}

bool RunStore::resume(const std::string& run_id, int seen_seq, const Json& retry_steps, const Json& reopen_steps,
                      const OperatorAction& action) {
  bool resumed = false;
  const std::string action_id = detail::random_uuid();
  pool_.write("resume_run", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    auto run = tx.exec_prepared(stmt::resume_run, run_id, seen_seq);
    if (run.empty()) {
      resumed = maybe_committed && audited(tx, action_id).has_value();
      return;
    }
    const std::string workflow_id = run[0]["workflow_id"].as<std::string>();
    const Json data =
        seal_.seal_fields({{"retry_steps", retry_steps}, {"actor", action.actor}, {"reason", action.reason}});
    tx.exec_prepared0(stmt::journal_resumed, run_id, run[0]["seq"].as<int>(), data.dump());
    Json steps = retry_steps;
    for (const auto& step : reopen_steps) steps.push_back(step);
    tx.exec_prepared0(stmt::reopen_tasks, run_id, steps.dump());
    insert_audit(tx, seal_, action, action_id, "resume", workflow_id, run_id, {{"retry_steps", retry_steps}});
    tx.exec_params("SELECT pg_notify($1, ''), pg_notify($2, '')", workflows_channel_, tasks_channel_);
    resumed = true;
    tx.commit();
  });
  return resumed;
}

bool RunStore::fork(const ForkedRun& run, const OperatorAction& action) {
  bool forked = false;
  const std::string action_id = detail::random_uuid();
  // The copies are stored as the engine stores new values: encoded when a codec is on.
  const std::string input = seal_.sealed_dump(run.input);
  Json sealed_events = Json::array();
  for (const Json& e : run.events) {
    Json copy = e;
    if (copy.contains("data")) copy["data"] = seal_.seal_fields(copy["data"]);
    sealed_events.push_back(std::move(copy));
  }
  const std::string events = sealed_events.dump();
  pool_.write("fork_run", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    forked = false;
    if (maybe_committed && !tx.exec_prepared(stmt::run_exists, run.run_id).empty()) {
      forked = true;  // an earlier try went in
      return;
    }
    // The source stays while its tasks are copied (a delete or prune waits).
    if (tx.exec_prepared(stmt::share_run, run.source_run_id).empty()) {
      return;  // deleted meanwhile: nothing written
    }
    if (run.replace_latest) {
      if (tx.exec_prepared(stmt::retire_ended_latest, run.workflow_id).empty()) {
        return;  // its latest run is running (again): nothing written
      }
    }
    auto inserted = tx.exec_prepared(stmt::insert_fork, run.workflow_id, run.run_id, run.name, input, events,
                                     run.source_run_id, run.from_step);
    if (inserted.empty()) return;  // the id is taken: nothing written
    // The copies are told apart by their time: the run's, this transaction's (now()).
    tx.exec_prepared0(stmt::copy_fork_journal, run.run_id, events);
    // The open steps run again, pending, as their scheduled events say (their source tasks may be gone).
    tx.exec_prepared0(stmt::copy_fork_tasks, run.run_id, run.workflow_id, events, run.open_steps.dump());
    insert_audit(tx, seal_, action, action_id, "fork", run.workflow_id, run.run_id,
                 {{"source_run_id", run.source_run_id}, {"from_step", run.from_step}});
    tx.exec_params("SELECT pg_notify($1, ''), pg_notify($2, '')", workflows_channel_, tasks_channel_);
    forked = true;
    tx.commit();
  });
  return forked;
}

}  // namespace durable::pg
