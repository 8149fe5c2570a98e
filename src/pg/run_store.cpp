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

// The columns of a run as lists show it, then those of a run in full.
const char* const summary_columns = R"(w.workflow_id, w.run_id::text, w.name, w.status, w.latest, w.started_by,
  coalesce(w.origin, '') AS origin, coalesce(w.app_version, '') AS app_version,
  w.status = 'running' AND w.blocked_at IS NOT NULL AS blocked, {s}.epoch_us(w.created_at) AS created_us,
  {s}.epoch_us(w.updated_at) AS updated_us, {s}.epoch_us(w.ended_at) AS ended_us)";
const char* const info_columns = R"(, w.input::text, w.result::text, coalesce(w.error_type, '') AS error_type,
  coalesce(w.error_message, '') AS error_message, w.next_seq, coalesce(w.parent_run_id::text, '') AS parent_run_id,
  coalesce(w.forked_from_run::text, '') AS forked_from_run, coalesce(w.forked_from_step, -1) AS forked_from_step,
  coalesce(w.continued_from::text, '') AS continued_from, w.blocked::text AS blocked_by,
  {s}.epoch_us(w.blocked_at) AS blocked_us,
  CASE WHEN w.status = 'continued' THEN w.result->>'continued_as' ELSE '' END AS continued_as,
  (SELECT count(*) FROM {s}.journal_events j WHERE j.run_id = w.run_id AND j.kind = 'activity_scheduled') AS activities,
  -- the attempts of open, failed and dropped tasks, then of completed ones (whose rows are gone),
  -- not those of the events a fork copied (the source's; written with the run, at its created_at)
  (SELECT coalesce(sum(t.attempt), 0) FROM {s}.tasks t WHERE t.run_id = w.run_id)
    + (SELECT coalesce(sum((j.data->>'attempts')::int), 0) FROM {s}.journal j  -- a completed event is its row's first
       WHERE j.run_id = w.run_id AND j.kind = 'activity_completed'
         AND NOT (w.forked_from_run IS NOT NULL AND j.created_at = w.created_at)) AS attempts,
  (SELECT count(*) FROM {s}.attempts a WHERE a.run_id = w.run_id AND a.outcome <> 'completed') AS failed_attempts)";

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

// The WHERE conditions of a filter, its values quoted by the transaction.
std::string conditions(pqxx::transaction_base& tx, const std::string& s, const RunFilter& f, bool with_statuses) {
  std::vector<std::string> c;
  if (with_statuses && !f.statuses.empty()) {
    std::string in;
    for (WorkflowStatus st : f.statuses) in += (in.empty() ? "" : ", ") + tx.quote(std::string(to_string(st)));
    c.push_back("w.status IN (" + in + ")");
  }
  if (!f.workflow_name.empty()) c.push_back("w.name = " + tx.quote(f.workflow_name));
  if (!f.id_prefix.empty()) c.push_back("w.workflow_id COLLATE \"C\" LIKE " + tx.quote(prefix_pattern(f.id_prefix)));
  auto at = [&](const char* column, const char* op, const std::optional<TimePoint>& t) {
    if (t) c.push_back(fmt::format("w.{} {} {}.from_us({})", column, op, s, us_of(*t)));
  };
  at("created_at", ">=", f.created_from);
  at("created_at", "<", f.created_until);
  at("ended_at", ">=", f.ended_from);
  at("ended_at", "<", f.ended_until);
  if (!f.schedule_id.empty()) c.push_back("w.started_by = 'schedule' AND w.origin = " + tx.quote(f.schedule_id));
  if (!f.trigger.empty()) c.push_back("w.started_by = 'trigger' AND w.origin = " + tx.quote(f.trigger));
  if (!f.parent_run_id.empty()) c.push_back("w.parent_run_id = " + tx.quote(f.parent_run_id) + "::uuid");
  if (f.app_version) {
    c.push_back(f.app_version->empty() ? std::string("w.app_version IS NULL")
                                       : "w.app_version = " + tx.quote(*f.app_version));
  }
  if (f.blocked_only) c.push_back("w.status = 'running' AND w.blocked_at IS NOT NULL");
  std::string out;
  for (const auto& one : c) out += (out.empty() ? "" : " AND ") + one;
  return out.empty() ? "true" : out;
}

// Deletes the ended runs among those subquery `chosen` selects (of $1, `param`) that still pass
// `recheck` when their rows are reached, with their journal, tasks, attempts, messages and events; an id that lost
// its latest run gets its newest remaining run as the latest. Returns the runs deleted. No lock is
// taken before (a row lock is a WAL record per run): a run changed meanwhile (resumed, and maybe
// ended again) is checked again as its row is reached, and its history goes in a second statement,
// whose snapshot sees everything written before its row was deleted. Nothing adds to the history
// of a run whose row is gone.
std::int64_t delete_runs(pqxx::transaction_base& tx, const std::string& s, const std::string& chosen,
                         const std::string& recheck, const std::string& param) {
  auto deleted = tx.exec_params(fmt::format("DELETE FROM {0}.workflows WHERE run_id IN ({1}) AND status <> 'running' "
                                            "{2} RETURNING run_id::text, workflow_id, latest",
                                            s, chosen, recheck),
                                param);
  if (deleted.empty()) return 0;
  Json runs = Json::array();
  for (const auto& row : deleted) runs.push_back(row["run_id"].as<std::string>());
  tx.exec_params0(fmt::format(R"(
WITH v AS (SELECT jsonb_array_elements_text($1::jsonb)::uuid AS run_id),
t AS (DELETE FROM {0}.tasks WHERE run_id IN (SELECT run_id FROM v) RETURNING task_id),
a AS (DELETE FROM {0}.attempts WHERE run_id IN (SELECT run_id FROM v)),
k AS (DELETE FROM {0}.idempotency_locks WHERE task_id IN (SELECT task_id FROM t)),
m AS (DELETE FROM {0}.messages WHERE run_id IN (SELECT run_id FROM v)),
e AS (DELETE FROM {0}.events WHERE run_id IN (SELECT run_id FROM v))
DELETE FROM {0}.journal WHERE run_id IN (SELECT run_id FROM v))",
                              s),
                  runs.dump());
  Json orphaned = Json::array();
  for (const auto& row : deleted) {
    if (row["latest"].as<bool>()) orphaned.push_back(row["workflow_id"].as<std::string>());
  }
  // The newest remaining run of each id becomes its latest (most pruned ids have none left). A
  // concurrent delete of the chosen run makes the update skip it once that delete commits: then
  // the next round, with a newer snapshot, takes the next newest.
  while (!orphaned.empty()) {
    const auto round = tx.exec_params1(fmt::format(R"(
WITH c AS (SELECT DISTINCT ON (workflow_id) workflow_id, run_id FROM {0}.workflows  -- by workflows_by_id
           WHERE workflow_id COLLATE "C" IN (SELECT jsonb_array_elements_text($1::jsonb))
           ORDER BY workflow_id, created_at DESC),
u AS (UPDATE {0}.workflows w SET latest = true FROM c WHERE w.run_id = c.run_id RETURNING w.workflow_id)
SELECT coalesce((SELECT jsonb_agg(c.workflow_id) FROM c WHERE c.workflow_id NOT IN (SELECT workflow_id FROM u)),
                '[]')::text AS skipped)",
                                                   s),
                                       orphaned.dump());
    orphaned = Json::parse(round["skipped"].c_str());
  }
  return static_cast<std::int64_t>(deleted.size());
}

}  // namespace

RunStore::RunStore(ConnectionPool& pool, detail::Sealer sealer)
    : pool_(pool),
      seal_(std::move(sealer)),
      s_(quoted(pool.schema())),
      workflows_channel_(wake_channel(pool.schema(), Wake::workflows)),
      tasks_channel_(wake_channel(pool.schema(), Wake::tasks)),
      ended_channel_(wake_channel(pool.schema(), Wake::ended)) {}

RunPage RunStore::list(const RunFilter& filter, int limit, std::optional<std::int64_t> cursor_us,
                       const std::string& cursor_run) {
  RunPage page;
  pool_.read([&](pqxx::connection& conn) {
    page = {};
    pqxx::nontransaction tx(conn);
    std::string where = conditions(tx, s_, filter, true);
    if (cursor_us) {
      where += fmt::format(" AND (w.created_at, w.run_id) < ({}.from_us({}), {}::uuid)", s_, *cursor_us,
                           tx.quote(cursor_run));
    }
    auto rows =
        tx.exec(fmt::format("SELECT {} FROM {}.workflows w WHERE {} ORDER BY w.created_at DESC, w.run_id DESC "
                            "LIMIT {}",
                            fmt::format(fmt::runtime(summary_columns), fmt::arg("s", s_)), s_, where, limit + 1));
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
    pqxx::nontransaction tx(conn);
    const std::string where = conditions(tx, s_, filter, false);
    std::string sql;
    if (at_most == 0) {
      sql = fmt::format("SELECT w.status, count(*) AS n FROM {}.workflows w WHERE {} GROUP BY w.status", s_, where);
    } else {  // per status, reads stop after at_most + 1 rows
      for (const char* status : {"running", "completed", "failed", "cancelled", "continued"}) {
        sql += fmt::format(
            "{}SELECT '{}' AS status, (SELECT count(*) FROM (SELECT FROM {}.workflows w WHERE {} AND "
            "w.status = '{}' LIMIT {}) AS x) AS n",
            sql.empty() ? "" : " UNION ALL ", status, s_, where, status, at_most + 1);
      }
    }
    for (const auto& row : tx.exec(sql)) {
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
    const std::string now = fmt::format("(SELECT now() + skew FROM {}.clock)", s_);
    st.at = time_of(tx.exec1(fmt::format("SELECT {}.epoch_us({}) AS now_us", s_, now))["now_us"].as<std::int64_t>());
    for (const auto& row :
         tx.exec(fmt::format("SELECT w.status, count(*) AS n, count(*) FILTER (WHERE w.status = 'running' AND "
                             "w.blocked_at IS NOT NULL) AS blocked FROM {}.workflows w GROUP BY w.status",
                             s_))) {
      st.runs_by_status[public_status(row["status"].as<std::string>())] = row["n"].as<std::int64_t>();
      st.blocked += row["blocked"].as<std::int64_t>();
    }
    auto oldest =
        tx.exec(fmt::format("SELECT {} FROM {}.workflows w WHERE w.status = 'running' ORDER BY w.created_at "
                            "LIMIT 1",
                            fmt::format(fmt::runtime(summary_columns), fmt::arg("s", s_)), s_));
    if (!oldest.empty()) read_summary(oldest[0], st.oldest_running.emplace());
    // Ready: what a claim would take (due, or its attempt's lease ran out), as the queue-age gauge reads it.
    for (const auto& row : tx.exec(fmt::format(R"(
WITH t AS (
  SELECT name, status = 'pending' AND available_at <= n.now AS due, status = 'running' AND lease_until < n.now AS lost,
         status = 'pending' AND available_at > n.now AS delayed, status = 'running' AND lease_until >= n.now AS running,
         CASE WHEN status = 'pending' THEN available_at ELSE lease_until END AS since, n.now
  FROM {0}.tasks, (SELECT {1} AS now) AS n WHERE status IN ('pending', 'running'))
SELECT name, count(*) FILTER (WHERE due OR lost) AS ready, count(*) FILTER (WHERE delayed) AS delayed,
       count(*) FILTER (WHERE running) AS running,
       coalesce(extract(epoch FROM max(now) - min(since) FILTER (WHERE due OR lost)), 0)::float8 AS oldest
FROM t GROUP BY name ORDER BY name)",
                                               s_, now))) {
      st.activity_queues.push_back({row["name"].as<std::string>(), row["ready"].as<std::int64_t>(),
                                    row["delayed"].as<std::int64_t>(), row["running"].as<std::int64_t>(),
                                    row["oldest"].as<double>()});
    }
    // Waiting: what a runner would claim (runnable, or its timer came due), unleased.
    for (const auto& row : tx.exec(fmt::format(R"(
SELECT w.name, count(*) AS waiting,
       coalesce(extract(epoch FROM max(n.now) - min(CASE WHEN w.runnable THEN w.runnable_since ELSE w.wake_at END)),
                0)::float8 AS oldest
FROM {0}.workflows w, (SELECT {1} AS now) AS n
WHERE w.status = 'running' AND (w.runnable OR w.wake_at <= n.now) AND (w.lease_until IS NULL OR w.lease_until < n.now)
GROUP BY w.name ORDER BY w.name)",
                                               s_, now))) {
      st.workflow_queues.push_back(
          {row["name"].as<std::string>(), row["waiting"].as<std::int64_t>(), row["oldest"].as<double>()});
    }
    for (const auto& row : tx.exec(fmt::format(R"(
WITH leased AS (
  SELECT lease_owner AS owner, count(*) AS n FROM {0}.tasks, (SELECT {1} AS now) AS n
  WHERE status = 'running' AND lease_until >= n.now GROUP BY lease_owner)
SELECT coalesce(e.owner, l.owner) AS owner, coalesce(e.instance, '') AS instance,
       coalesce(e.app_version, '') AS app_version, coalesce(e.activity_capacity, 0) AS activity_capacity,
       coalesce(e.workflow_capacity, 0) AS workflow_capacity, coalesce(l.n, 0) AS leased,
       {0}.epoch_us(e.started_at) AS started_us, {0}.epoch_us(e.seen_at) AS seen_us,
       coalesce(e.expires_at >= now(), false) AS alive
FROM {0}.engines e FULL JOIN leased l ON l.owner = e.owner ORDER BY 1)",
                                               s_, now))) {
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
    auto rows = tx.exec_params(fmt::format("SELECT {}{} FROM {}.workflows w WHERE w.run_id = $1::uuid",
                                           fmt::format(fmt::runtime(summary_columns), fmt::arg("s", s_)),
                                           fmt::format(fmt::runtime(info_columns), fmt::arg("s", s_)), s_),
                               run_id);
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
    found = !tx.exec_params(fmt::format("SELECT 1 FROM {}.workflows WHERE run_id = $1::uuid", s_), run_id).empty();
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
    auto events = tx.exec_params(
        fmt::format("SELECT j.seq, j.kind, coalesce(j.step, -1) AS step, coalesce(j.name, '') AS name, "
                    "{0}.epoch_us(j.created_at) AS at_us, j.data::text AS data "
                    "FROM {0}.journal_events j WHERE j.run_id = $1::uuid AND j.seq >= $2 AND j.row_seq >= "
                    "(SELECT coalesce(max(r.seq), 0) FROM {0}.journal r WHERE r.run_id = $1::uuid AND r.seq <= $2) "
                    "ORDER BY j.seq LIMIT $3",
                    s_),
        run_id, from_seq, limit + 1);
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
    auto attempts = tx.exec_params(fmt::format(R"(
SELECT t.step, t.name, a.attempt, {0}.epoch_us(a.started_at) AS started_us, {0}.epoch_us(a.ended_at) AS ended_us,
       a.outcome, coalesce(a.error_type, '') AS error_type, coalesce(a.error_message, '') AS error_message,
       {0}.epoch_us(a.retry_at) AS retry_us
FROM {0}.attempts a JOIN {0}.tasks t ON t.run_id = a.run_id AND t.step = a.step WHERE a.run_id = $1::uuid AND a.step = ANY($2::int[])
UNION ALL  -- the failed attempts of completed tasks, whose rows are gone
SELECT a.step, j.name, a.attempt, {0}.epoch_us(a.started_at), {0}.epoch_us(a.ended_at), a.outcome,
       coalesce(a.error_type, ''), coalesce(a.error_message, ''), {0}.epoch_us(a.retry_at)
FROM {0}.attempts a JOIN {0}.journal j ON j.run_id = a.run_id AND j.kind = 'activity_completed' AND j.step = a.step
WHERE a.run_id = $1::uuid AND a.step = ANY($2::int[]) AND j.seq >= $3 AND a.outcome <> 'completed'
  AND NOT EXISTS (SELECT 1 FROM {0}.tasks x WHERE x.run_id = a.run_id AND x.step = a.step)  -- (versions before 9 recorded successes too)
UNION ALL  -- the attempt running now
SELECT t.step, t.name, t.attempt, {0}.epoch_us(t.attempt_started_at), NULL, t.status, '', '', NULL
FROM {0}.tasks t WHERE t.run_id = $1::uuid AND t.step = ANY($2::int[]) AND t.status = 'running'
  AND NOT EXISTS (SELECT 1 FROM {0}.attempts x WHERE x.task_id = t.task_id AND x.attempt = t.attempt)
UNION ALL  -- the attempt that succeeded, in the step's completed event (after its scheduled one), not
           -- in the events a fork copied (those attempts were the source's). (A completed event is
           -- always its journal row's first: the rows are read, not their events.)
SELECT j.step, j.name, (j.data->>'attempts')::int, (j.data->>'started_us')::bigint, {0}.epoch_us(j.created_at),
       'completed', '', '', NULL
FROM {0}.journal j
WHERE j.run_id = $1::uuid AND j.seq >= $3 AND j.kind = 'activity_completed' AND j.step = ANY($2::int[])
  AND NOT EXISTS (SELECT 1 FROM {0}.workflows f  -- a fork's copies are written with the run, at its created_at
                  WHERE f.run_id = $1::uuid AND f.forked_from_run IS NOT NULL AND f.created_at = j.created_at)
ORDER BY 1, 3)",
                                               s_),
                                   run_id, "{" + steps + "}", from_seq);
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
    for (const auto& row : tx.exec_params(
             fmt::format(
                 "SELECT audit_id, {0}.epoch_us(at) AS at_us, actor, action, reason, "
                 "coalesce(workflow_id, '') AS workflow_id, coalesce(run_id::text, '') AS run_id, details::text "
                 "FROM {0}.audit WHERE audit_id < $1 ORDER BY audit_id DESC LIMIT $2",
                 s_),
             before.value_or(INT64_MAX), limit)) {
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
      running = running || (maybe_committed && audited(tx, s_, action_id).has_value());
      return;
    }
    auto wf = tx.exec_prepared1(stmt::read_run, run_id);
    insert_audit(tx, s_, seal_, action, action_id, "cancel", wf["workflow_id"].as<std::string>(), run_id,
                 Json::object());
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
      terminated = maybe_committed && audited(tx, s_, action_id).has_value();
      return;
    }
    auto wf = tx.exec_prepared1(stmt::read_run, run_id);
    insert_audit(tx, s_, seal_, action, action_id, "terminate", wf["workflow_id"].as<std::string>(), run_id,
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
      removed = maybe_committed && audited(tx, s_, action_id).has_value();  // an earlier try deleted it
      return;
    }
    const std::string workflow_id = wf[0]["workflow_id"].as<std::string>();
    removed = delete_runs(tx, s_, "$1::uuid", "", run_id) == 1;
    if (!removed) return;  // running: nothing written
    insert_audit(tx, s_, seal_, action, action_id, "delete", workflow_id, run_id,
                 {{"status", wf[0]["status"].as<std::string>()}});
    tx.commit();
  });
  return removed;
}

std::int64_t RunStore::db_now_us() { return pg::db_now_us(pool_); }

PruneOutcome RunStore::prune(std::int64_t ended_before_us, const OperatorAction& action, bool dry_run, bool exclusive) {
  PruneOutcome outcome;
  const std::string due = fmt::format("status <> 'running' AND ended_at < {}.from_us($1)", s_);
  if (dry_run) {
    pool_.read([&](pqxx::connection& conn) {
      pqxx::nontransaction tx(conn);
      outcome.runs =
          tx.exec_params1(fmt::format("SELECT count(*) FROM {}.workflows WHERE {}", s_, due), ended_before_us)[0]
              .as<std::int64_t>();
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
      if (const auto done = maybe_committed ? audited(tx, s_, action_id) : std::nullopt) {
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
      deleted = delete_runs(
          tx, s_,
          fmt::format("SELECT run_id FROM {}.workflows WHERE {} ORDER BY ended_at LIMIT {}", s_, due, prune_batch),
          "AND " + due, std::to_string(ended_before_us));
      if (deleted == 0) {
        due_left = !tx.exec_params(fmt::format("SELECT 1 FROM {}.workflows WHERE {} LIMIT 1", s_, due), ended_before_us)
                        .empty();
        return;
      }
      // After a lost answer the entry may not exist: then this batch starts a new one.
      const bool counted =
          audit_id != 0 && !tx.exec_params(fmt::format("UPDATE {}.audit SET details = jsonb_set(details, "
                                                       "'{{runs}}', to_jsonb((details->>'runs')::bigint "
                                                       "+ $2)) WHERE audit_id = $1 RETURNING 1",
                                                       s_),
                                           audit_id, deleted)
                                .empty();
      if (!counted) {
        audit_id = insert_audit(tx, s_, seal_, action, action_id, "prune", "", "",
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
      if (auto done = audited(tx, s_, action_id)) {  // an earlier try went in
        expired = done->at("results").get<std::int64_t>();
        return;
      }
    }
    expired = static_cast<std::int64_t>(
        tx.exec_params(
              fmt::format("DELETE FROM {0}.idempotent_results WHERE created_at < {0}.from_us($1) RETURNING 1", s_),
              created_before_us)
            .size());
    insert_audit(tx, s_, seal_, action, action_id, "expire_idempotency_results", "", "",
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
    auto run = tx.exec_params(fmt::format(R"(
WITH o AS (SELECT run_id, blocked FROM {0}.workflows WHERE run_id = $1::uuid FOR UPDATE)
UPDATE {0}.workflows w
SET blocked_at = NULL, blocked = NULL, runnable = true,
    runnable_since = CASE WHEN w.runnable THEN w.runnable_since ELSE now() END, updated_at = now()
FROM o WHERE w.run_id = o.run_id AND (w.status = 'running') IS TRUE AND w.blocked_at IS NOT NULL
RETURNING w.workflow_id, o.blocked::text AS blocked)",
                                          s_),
                              run_id);
    if (run.empty()) {
      unblocked = maybe_committed && audited(tx, s_, action_id).has_value();
      return;
    }
    insert_audit(tx, s_, seal_, action, action_id, "resume", run[0]["workflow_id"].as<std::string>(), run_id,
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
    auto run = tx.exec_params(fmt::format(R"(
UPDATE {0}.workflows
SET status = 'running', result = NULL, error_type = NULL, error_message = NULL, ended_at = NULL, runnable = true,
    runnable_since = now(), wake_at = NULL, next_seq = next_seq + 1, replay_lag = replay_lag + 1, lease_token = NULL,
    lease_owner = NULL,
    lease_until = NULL, updated_at = now()
WHERE run_id = $1::uuid AND status = 'failed' AND latest AND next_seq = $2
RETURNING workflow_id, next_seq - 1 AS seq)",
                                          s_),
                              run_id, seen_seq);
    if (run.empty()) {
      resumed = maybe_committed && audited(tx, s_, action_id).has_value();
      return;
    }
    const std::string workflow_id = run[0]["workflow_id"].as<std::string>();
    const Json data =
        seal_.seal_fields({{"retry_steps", retry_steps}, {"actor", action.actor}, {"reason", action.reason}});
    tx.exec_params0(fmt::format("INSERT INTO {}.journal (run_id, seq, kind, data) "
                                "VALUES ($1::uuid, $2, 'workflow_resumed', $3::jsonb)",
                                s_),
                    run_id, run[0]["seq"].as<int>(), data.dump());
    Json steps = retry_steps;
    for (const auto& step : reopen_steps) steps.push_back(step);
    tx.exec_params0(fmt::format(R"(
UPDATE {}.tasks
SET status = 'pending', attempt_base = attempt, available_at = now(), first_started_at = NULL, attempt_started_at = NULL,
    result = NULL, error_type = NULL, error_message = NULL, lease_token = NULL, lease_owner = NULL, claim_token = NULL,
    lease_until = NULL, updated_at = now()
WHERE run_id = $1::uuid AND step IN (SELECT jsonb_array_elements_text($2::jsonb)::int))",
                                s_),
                    run_id, steps.dump());
    insert_audit(tx, s_, seal_, action, action_id, "resume", workflow_id, run_id, {{"retry_steps", retry_steps}});
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
    if (maybe_committed &&
        !tx.exec_params(fmt::format("SELECT 1 FROM {}.workflows WHERE run_id = $1::uuid", s_), run.run_id).empty()) {
      forked = true;  // an earlier try went in
      return;
    }
    // The source stays while its tasks are copied (a delete or prune waits).
    if (tx.exec_params(fmt::format("SELECT 1 FROM {}.workflows WHERE run_id = $1::uuid FOR SHARE", s_),
                       run.source_run_id)
            .empty()) {
      return;  // deleted meanwhile: nothing written
    }
    if (run.replace_latest) {
      if (tx.exec_params(fmt::format("UPDATE {}.workflows SET latest = false WHERE workflow_id = $1 AND latest AND "
                                     "status <> 'running' RETURNING 1",
                                     s_),
                         run.workflow_id)
              .empty()) {
        return;  // its latest run is running (again): nothing written
      }
    }
    auto inserted =
        tx.exec_params(fmt::format(R"(
INSERT INTO {0}.workflows (workflow_id, run_id, name, status, input, next_seq, replay_lag, runnable, started_by,
                           forked_from_run, forked_from_step, created_at)
VALUES ($1, $2::uuid, $3, 'running', $4::jsonb, jsonb_array_length($5::jsonb), jsonb_array_length($5::jsonb), true,
        'fork', $6::uuid, $7, now())
ON CONFLICT (workflow_id) WHERE latest DO NOTHING
RETURNING 1)",
                                   s_),
                       run.workflow_id, run.run_id, run.name, input, events, run.source_run_id, run.from_step);
    if (inserted.empty()) return;  // the id is taken: nothing written
    // The copies are told apart by their time: the run's, this transaction's (now()).
    tx.exec_params0(fmt::format(R"(
INSERT INTO {0}.journal (run_id, seq, kind, step, name, data, created_at)
SELECT $1::uuid, x.ord - 1, x.v->>'kind', (x.v->>'step')::int, x.v->>'name', x.v->'data', now()
FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS x(v, ord))",
                                s_),
                    run.run_id, events);
    // The open steps run again, pending, as their scheduled events say (their source tasks may be gone).
    tx.exec_params0(fmt::format(R"(
INSERT INTO {0}.tasks (run_id, workflow_id, step, name, input, options, idempotency_key, status, available_at)
SELECT $1::uuid, $2, (x.v->>'step')::int, x.v->>'name', x.v->'data'->'input', coalesce(x.v->'data'->'options', '{{}}'),
       decode(x.v->'data'->'options'->>'idempotency_key_hex', 'hex'), 'pending', now()
FROM jsonb_array_elements($3::jsonb) AS x(v)
WHERE x.v->>'kind' = 'activity_scheduled' AND (x.v->>'step')::int IN (SELECT jsonb_array_elements_text($4::jsonb)::int))",
                                s_),
                    run.run_id, run.workflow_id, events, run.open_steps.dump());
    insert_audit(tx, s_, seal_, action, action_id, "fork", run.workflow_id, run.run_id,
                 {{"source_run_id", run.source_run_id}, {"from_step", run.from_step}});
    tx.exec_params("SELECT pg_notify($1, ''), pg_notify($2, '')", workflows_channel_, tasks_channel_);
    forked = true;
    tx.commit();
  });
  return forked;
}

}  // namespace durable::pg
