#include "pg/run_store.hpp"

#include <fmt/format.h>

#include "base/uuid.hpp"
#include "pg/connection_pool.hpp"
#include "pg/database.hpp"
#include "pg/records.hpp"
#include "pg/rows.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

namespace {

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
  r.run_id = RunId{row["run_id"].as<std::string>()};
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
  r.parent_run_id = RunId{row["parent_run_id"].as<std::string>()};
  r.forked_from_run = RunId{row["forked_from_run"].as<std::string>()};
  r.forked_from_step = row["forked_from_step"].as<int>();
  r.continued_from_run = RunId{row["continued_from"].as<std::string>()};
  r.continued_as_run = RunId{row["continued_as"].as<std::string>()};
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
  p.parent_run_id = text(f.parent_run_id.str());
  p.app_version = f.app_version;
  p.blocked_only = f.blocked_only;
  return p;
}

// Runs `statement` with the filter as its $1 to $12, then `more`.
template <typename... More>
pqxx::result exec_filtered(pqxx::transaction_base& tx, const char* statement, const FilterParams& p,
                           const More&... more) {
  return exec(tx, statement, p.statuses, p.workflow_name, p.id_pattern, p.created_from, p.created_until, p.ended_from,
              p.ended_until, p.schedule_id, p.trigger, p.parent_run_id, p.app_version, p.blocked_only, more...);
}

// A filtered read plans with its values (for this transaction only; the session plans its step
// statements once, generic): a generic plan keeps every `$n IS NULL` test and cannot turn an id
// prefix into an index range.
void plan_with_values(pqxx::transaction_base& tx) { tx.exec0("SET LOCAL plan_cache_mode = force_custom_plan"); }

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
    st.at = time_of(exec1(tx, stmt::stats_now)["now_us"].as<std::int64_t>());
    for (const auto& row : exec(tx, stmt::stats_runs)) {
      st.runs_by_status[public_status(row["status"].as<std::string>())] = row["n"].as<std::int64_t>();
      st.blocked += row["blocked"].as<std::int64_t>();
    }
    auto oldest = exec(tx, stmt::stats_oldest_running);
    if (!oldest.empty()) read_summary(oldest[0], st.oldest_running.emplace());
    // Ready: what a claim would take (due, or its attempt's lease ran out), as the queue-age gauge reads it.
    for (const auto& row : exec(tx, stmt::stats_activity_queues)) {
      st.activity_queues.push_back({row["name"].as<std::string>(), row["ready"].as<std::int64_t>(),
                                    row["delayed"].as<std::int64_t>(), row["running"].as<std::int64_t>(),
                                    row["oldest"].as<double>()});
    }
    // Waiting: what a runner would claim (runnable, or its timer came due), unleased.
    for (const auto& row : exec(tx, stmt::stats_workflow_queues)) {
      st.workflow_queues.push_back(
          {row["name"].as<std::string>(), row["waiting"].as<std::int64_t>(), row["oldest"].as<double>()});
    }
    for (const auto& row : exec(tx, stmt::stats_instances)) {
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
    auto rows = exec(tx, stmt::read_run_info, run_id);
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
    found = !exec(tx, stmt::run_exists, run_id).empty();
  });
  return found;
}

std::optional<RunInfo> RunStore::latest(const std::string& workflow_id) {
  std::string run_id;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    auto found = exec(tx, stmt::read_workflow, workflow_id);
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
    auto events = exec(tx, stmt::history_events, run_id, from_seq, limit + 1);
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
    auto attempts = exec(tx, stmt::history_attempts, run_id, "{" + steps + "}", from_seq);
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
    for (const auto& row : exec(tx, stmt::audit_page, before.value_or(INT64_MAX), limit)) {
      AuditEntry& e = entries.emplace_back();
      e.id = row["audit_id"].as<std::int64_t>();
      e.at = time_of(row["at_us"].as<std::int64_t>());
      e.actor = row["actor"].as<std::string>();
      e.action = row["action"].as<std::string>();
      e.reason = seal_.open_text(row["reason"].as<std::string>(), "an audit entry's reason");
      e.workflow_id = row["workflow_id"].as<std::string>();
      e.run_id = RunId{row["run_id"].as<std::string>()};
      e.details = Json::parse(row["details"].c_str());
    }
  });
  return entries;
}

}  // namespace durable::pg
