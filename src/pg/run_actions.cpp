// RunStore's operator actions: cancel, terminate, remove, prune, expire idempotency results,
// unblock, resume and fork. Each writes an audit entry in the transaction that acts.
#include "base/uuid.hpp"
#include "pg/audit.hpp"
#include "pg/connection_pool.hpp"
#include "pg/database.hpp"
#include "pg/records.hpp"
#include "pg/rows.hpp"
#include "pg/run_store.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

namespace {

constexpr int prune_batch = 1000;  // runs per transaction

// After `deleted` (rows of prune_runs or delete_run): deletes the history of those runs, and an
// id that lost its latest run gets its newest remaining run as the latest. Returns the runs
// deleted. A run changed meanwhile (resumed, and maybe ended again) was checked again as its row
// was reached; its history goes in a second statement, whose snapshot sees everything written
// before its row was deleted. Nothing adds to the history of a run whose row is gone.
std::int64_t delete_history(pqxx::transaction_base& tx, const pqxx::result& deleted) {
  if (deleted.empty()) return 0;
  Json runs = Json::array();
  for (const auto& row : deleted) runs.push_back(row["run_id"].as<std::string>());
  exec0(tx, stmt::delete_history, runs.dump());
  Json orphaned = Json::array();
  for (const auto& row : deleted) {
    if (row["latest"].as<bool>()) orphaned.push_back(row["workflow_id"].as<std::string>());
  }
  // The newest remaining run of each id becomes its latest (most pruned ids have none left). A
  // concurrent delete of the chosen run makes the update skip it once that delete commits: then
  // the next round, with a newer snapshot, takes the next newest.
  while (!orphaned.empty()) {
    const auto round = exec1(tx, stmt::promote_latest, orphaned.dump());
    orphaned = Json::parse(round["skipped"].c_str());
  }
  return static_cast<std::int64_t>(deleted.size());
}

}  // namespace

bool RunStore::request_cancel(const std::string& run_id, const OperatorAction& action) {
  bool running = false;
  const std::string action_id = detail::random_uuid();
  pool_.write("request_cancel_audited", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    auto row = exec1(tx, stmt::request_cancel, run_id, seal_.seal_text(action.reason), workflows_channel_);
    running = rows::cancel_asked(tx, run_id, row);
    if (row["requested"].as<int>() == 0) {
      // Asked before (by an earlier try whose answer was lost, perhaps), or ended since.
      running = running || (maybe_committed && audited(tx, action_id).has_value());
      return;
    }
    auto wf = exec1(tx, stmt::read_run, run_id);
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
    auto row = exec1(tx, stmt::cancel_workflow, run_id, ended_channel_);
    terminated = row["cancelled"].as<int>() == 1;
    if (!terminated) {
      terminated = maybe_committed && audited(tx, action_id).has_value();
      return;
    }
    auto wf = exec1(tx, stmt::read_run, run_id);
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
    auto wf = exec(tx, stmt::read_run, run_id);
    if (wf.empty()) {
      removed = maybe_committed && audited(tx, action_id).has_value();  // an earlier try deleted it
      return;
    }
    const std::string workflow_id = wf[0]["workflow_id"].as<std::string>();
    removed = delete_history(tx, exec(tx, stmt::delete_run, run_id)) == 1;
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
      outcome.runs = exec1(tx, stmt::count_due_runs, ended_before_us)[0].as<std::int64_t>();
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
        locked = !exec(tx, stmt::lock_retention).empty();
        if (!locked) return;  // another engine prunes now
      }
      // The oldest due runs (a batch a concurrent prune took is waited for, then found gone).
      deleted = delete_history(tx, exec(tx, stmt::prune_runs, ended_before_us, prune_batch));
      if (deleted == 0) {
        due_left = !exec(tx, stmt::any_due_run, ended_before_us).empty();
        return;
      }
      // After a lost answer the entry may not exist: then this batch starts a new one.
      const bool counted = audit_id != 0 && !exec(tx, stmt::count_in_audit, audit_id, deleted).empty();
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
    expired = static_cast<std::int64_t>(exec(tx, stmt::expire_idempotent_results, created_before_us).size());
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
    auto run = exec(tx, stmt::unblock_run, run_id);
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
    auto run = exec(tx, stmt::resume_run, run_id, seen_seq);
    if (run.empty()) {
      resumed = maybe_committed && audited(tx, action_id).has_value();
      return;
    }
    const std::string workflow_id = run[0]["workflow_id"].as<std::string>();
    const Json data =
        seal_.seal_fields({{"retry_steps", retry_steps}, {"actor", action.actor}, {"reason", action.reason}});
    exec0(tx, stmt::journal_resumed, run_id, run[0]["seq"].as<int>(), data.dump());
    Json steps = retry_steps;
    for (const auto& step : reopen_steps) steps.push_back(step);
    exec0(tx, stmt::reopen_tasks, run_id, steps.dump());
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
    if (maybe_committed && !exec(tx, stmt::run_exists, run.run_id).empty()) {
      forked = true;  // an earlier try went in
      return;
    }
    // The source stays while its tasks are copied (a delete or prune waits).
    if (exec(tx, stmt::share_run, run.source_run_id).empty()) {
      return;  // deleted meanwhile: nothing written
    }
    if (run.replace_latest) {
      if (exec(tx, stmt::retire_ended_latest, run.workflow_id).empty()) {
        return;  // its latest run is running (again): nothing written
      }
    }
    auto inserted = exec(tx, stmt::insert_fork, run.workflow_id, run.run_id, run.name, input, events, run.source_run_id,
                         run.from_step);
    if (inserted.empty()) return;  // the id is taken: nothing written
    // The copies are told apart by their time: the run's, this transaction's (now()).
    exec0(tx, stmt::copy_fork_journal, run.run_id, events);
    // The open steps run again, pending, as their scheduled events say (their source tasks may be gone).
    exec0(tx, stmt::copy_fork_tasks, run.run_id, run.workflow_id, events, run.open_steps.dump());
    insert_audit(tx, seal_, action, action_id, "fork", run.workflow_id, run.run_id,
                 {{"source_run_id", run.source_run_id}, {"from_step", run.from_step}});
    tx.exec_params("SELECT pg_notify($1, ''), pg_notify($2, '')", workflows_channel_, tasks_channel_);
    forked = true;
    tx.commit();
  });
  return forked;
}

}  // namespace durable::pg
