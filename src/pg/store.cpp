#include "pg/store.hpp"

#include <functional>
#include <map>

#include "base/failpoint.hpp"
#include "pg/connection_pool.hpp"
#include "pg/rows.hpp"
#include "pg/statements.hpp"
#include "base/uuid.hpp"

namespace durable::pg {

namespace {

// A claim commits as it answers; if the answer is lost, a blind second claim would strand
// what the first one took until its lease ran out. So a retry first recovers by claim token:
// `claim(tx, token, recovering)` returns whether it found rows.
void claim_with_recovery(ConnectionPool& pool,
                         const std::function<bool(pqxx::transaction_base&, const std::string&, bool)>& claim) {
  const std::string token = detail::random_token();
  pool.write("claim", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    if (!(maybe_committed && claim(tx, token, true))) claim(tx, token, false);
    detail::failpoint("claim.before_commit");
    tx.commit();
  });
}

// A claimed task with its user payloads decoded. One that does not decode is still claimed (the
// others of its claim must not wait for its lease to run out): its attempt fails (undecodable),
// or is blocked when the codec lacks the key.
ClaimedTask opened_task(const pqxx::row& row, const detail::Sealer& seal) {
  ClaimedTask task = rows::claimed_task(row);
  try {
    task.input = seal.open(std::move(task.input), "an activity's input");
    task.last_heartbeat = seal.open(std::move(task.last_heartbeat), "an activity's heartbeat details");
  } catch (const CodecError& e) {
    task.key_unknown = dynamic_cast<const UnknownCodecKey*>(&e) != nullptr;
    task.undecodable = e.what();
    task.input = nullptr;
    task.last_heartbeat = nullptr;
  }
  return task;
}

std::vector<ClaimedTask> reclaim_tasks(pqxx::transaction_base& tx, const std::string& claim_token,
                                       const detail::Sealer& seal) {
  std::vector<ClaimedTask> tasks;
  for (const auto& row : tx.exec_prepared(stmt::reclaim_tasks, claim_token)) tasks.push_back(opened_task(row, seal));
  return tasks;
}

// The tasks a commit leased at once: from its answer's [task_id, step, lease_token] rows.
std::vector<ClaimedTask> leased_at_once(const ReplayCommit& commit, const pqxx::field& claimed, std::int64_t now_us) {
  std::vector<ClaimedTask> tasks;
  for (const auto& row : Json::parse(claimed.c_str())) {
    const int step = row[1].get<int>();
    for (const NewTask& spec : commit.tasks) {
      if (spec.step != step) continue;
      ClaimedTask t;
      t.task_id = row[0].get<std::int64_t>();
      t.run_id = commit.run_id;
      t.workflow_id = commit.workflow_id;
      t.step = step;
      t.name = spec.name;
      t.input = spec.input;
      t.options = spec.options;
      t.attempt = 1;
      t.lease_token = row[2].get<std::int64_t>();
      t.claimed_at_us = now_us;
      t.first_started_at_us = now_us;
      t.leased_at_once = true;
      tasks.push_back(std::move(t));
    }
  }
  return tasks;
}

// The json of new events as the statements read them.
Json children_json(const std::vector<NewChild>& children, const detail::Sealer& seal) {
  Json out = Json::array();
  for (const NewChild& c : children) {
    out.push_back({{"step", c.step},
                   {"workflow_id", c.workflow_id},
                   {"run_id", c.run_id},
                   {"name", c.name},
                   {"input", seal.seal(c.input)},
                   {"parent_close", c.parent_close},
                   {"depth", c.depth},
                   {"replaceable", c.replaceable}});
  }
  return out;
}

// The SQLSTATE of refuse_commit: a replay commit that found what it read outdated.
constexpr const char* refused_commit_state = "DUR01";

Json events_json(const std::vector<NewEvent>& events, const detail::Sealer& seal) {
  Json out = Json::array();
  for (const NewEvent& e : events) {
    out.push_back({{"kind", to_text(e.kind)}, {"step", e.step}, {"name", e.name}, {"data", seal.seal_fields(e.data)}});
  }
  return out;
}

// The task's status and whether it still carries `lease_token`; nullopt when there is no such task.
struct TaskState {
  TaskStatus status;
  bool same_lease;
};
std::optional<TaskState> task_state(pqxx::transaction_base& tx, const ClaimedTask& task) {
  auto rows = tx.exec_prepared(stmt::task_outcome, task.run_id, task.lease_token, task.step);
  if (rows.empty()) return std::nullopt;
  return TaskState{task_status_from_text(rows[0]["status"].as<std::string>()), rows[0]["same_lease"].as<bool>()};
}

// After a fenced finish matched nothing on a retry: did an earlier try of this very lease commit
// it before the connection dropped? Re-read, never redo. A completed task's row is gone: its
// completed event names the attempt that finished it, which no other lease shares.
bool finished_earlier(pqxx::transaction_base& tx, const StepCommit& c) {
  const ClaimedTask& task = *c.task;
  if (c.succeeded) {
    const int attempt = c.record_attempt ? task.attempt : task.attempt - 1;
    return !task_state(tx, task) && !tx.exec_prepared(stmt::step_completed, task.run_id, task.step, attempt).empty();
  }
  auto state = task_state(tx, task);
  return state && state->same_lease && state->status == TaskStatus::failed;
}

// The [activity, key hex] of a task whose idempotency key its waiters wait for.
Json waited_key(const ClaimedTask& task) { return Json::array({task.name, hex_of(*task.options.idempotency_key)}); }

// After a fenced retry matched nothing on a retry: did an earlier try of this attempt schedule it?
// Its attempt row says so (written by that statement only, with the time of the next attempt).
bool retried_earlier(pqxx::transaction_base& tx, const ClaimedTask& task) {
  return !tx.exec_prepared(stmt::attempt_retried, task.task_id, task.attempt).empty();
}

double read_age(ConnectionPool& pool, const char* statement, const std::string& names_json) {
  double age = 0;
  pool.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    age = tx.exec_prepared1(statement, names_json)["age"].as<double>();
  });
  return age;
}

}  // namespace

Store::Store(ConnectionPool& pool, std::string app_version, detail::Sealer sealer)
    : pool_(pool),
      app_version_(std::move(app_version)),
      seal_(std::move(sealer)),
      tokens_(pool),
      workflows_channel_(wake_channel(pool.schema(), Wake::workflows)),
      tasks_channel_(wake_channel(pool.schema(), Wake::tasks)),
      ended_channel_(wake_channel(pool.schema(), Wake::ended)),
      events_channel_(wake_channel(pool.schema(), Wake::events)) {}

Store::Started Store::start_workflow(const std::string& id, const std::string& run_id, const std::string& name,
                                     const Json& input, const RunOrigin& origin, const std::string& owner,
                                     Duration lease) {
  return insert_run(id, run_id, name, input, origin, {}, owner, lease);
}

Store::Started Store::reuse_workflow_id(const std::string& id, const std::string& run_id, const std::string& name,
                                        const Json& input, const RunOrigin& origin, const std::string& replaceable,
                                        const std::string& owner, Duration lease) {
  return insert_run(id, run_id, name, input, origin, replaceable, owner, lease);
}

Store::Started Store::insert_run(const std::string& id, const std::string& run_id, const std::string& name,
                                 const Json& input, const RunOrigin& origin, const std::string& replaceable,
                                 const std::string& owner, Duration lease) {
  Started started;
  const std::string stored_input = seal_.sealed_dump(input);
  const std::int64_t token = owner.empty() ? 0 : tokens_.take(1);
  auto lease_it = [&](std::int64_t lease_token, std::int64_t now_us) {
    started.leased = ClaimedWorkflow{id, run_id, name, 1, lease_token, now_us, Json{{"input", input}}};
  };
  // After a lost answer, an earlier try may have inserted the run: then it is ours, and so is its
  // lease if that still holds.
  auto find_own = [&](pqxx::transaction_base& tx) {
    auto own = tx.exec_prepared(stmt::own_start, id, run_id, owner);
    started.inserted = !own.empty();
    if (started.inserted && !own[0]["lease_token"].is_null()) {
      lease_it(own[0]["lease_token"].as<std::int64_t>(), own[0]["now_us"].as<std::int64_t>());
    }
  };
  auto insert = [&](pqxx::transaction_base& tx, bool maybe_committed) {
    started = {};
    auto row = tx.exec_prepared1(stmt::start_workflow, id, run_id, name, stored_input, workflows_channel_, "{}", owner,
                                 lease.count(), token, origin.started_by, origin.origin, app_version_);
    started.inserted = row["inserted"].as<int>() == 1;
    if (started.inserted) {
      if (!row["lease_token"].is_null())
        lease_it(row["lease_token"].as<std::int64_t>(), row["now_us"].as<std::int64_t>());
    } else if (maybe_committed) {
      find_own(tx);
    }
  };
  if (replaceable.empty()) {
    pool_.write("start_workflow", [&](pqxx::connection& conn, bool maybe_committed) {
      pqxx::nontransaction tx(conn);
      insert(tx, maybe_committed);
    });
    return started;
  }
  pool_.write("reuse_workflow_id", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    if (tx.exec_prepared(stmt::retire_run, id, replaceable).empty()) {
      started = {};
      if (maybe_committed) find_own(tx);
      return;  // rolled back: nothing written
    }
    insert(tx, false);  // the id has room now: the insert cannot conflict
    tx.commit();
  });
  return started;
}

SendOutcome Store::send_message(const std::string& workflow_id, const std::string& topic, const Json& payload,
                                const std::string& message_id, const std::string& idempotency_key) {
  SendOutcome outcome;
  const std::string body = seal_.sealed_dump(payload);
  pool_.write("send_message", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::nontransaction tx(conn);
    auto send = [&] {
      auto row = tx.exec_prepared1(stmt::send_message, workflow_id, topic, body, message_id, idempotency_key,
                                   workflows_channel_);
      outcome = {};
      if (!row["status"].is_null()) outcome.status = run_status_from_text(row["status"].as<std::string>());
      outcome.sent = row["sent"].as<int>() == 1;
      if (!row["existing_id"].is_null()) outcome.existing_id = row["existing_id"].as<std::string>();
    };
    if (maybe_committed) {
      // The answer of an earlier try was lost: it may have sent this very message.
      if (!tx.exec_prepared(stmt::own_message, workflow_id, message_id).empty()) {
        outcome = {};
        outcome.sent = true;
        return;
      }
    }
    try {
      send();
    } catch (const pqxx::unique_violation&) {
      send();  // a concurrent send with the same key committed first: this finds its message
    }
    if (outcome.existing_id == message_id) {  // an earlier try, with this key, committed
      outcome.sent = true;
      outcome.existing_id.clear();
    }
  });
  return outcome;
}

EventRead Store::read_event(const std::string& run_id, const std::string& key) {
  EventRead read;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    auto rows = tx.exec_prepared(stmt::read_event, run_id, key);
    read = {};
    if (rows.empty()) return;
    read.status = run_status_from_text(rows[0]["status"].as<std::string>());
    if (!rows[0]["value"].is_null())
      read.value = seal_.open(Json::parse(rows[0]["value"].as<std::string>()), "a published event's value");
  });
  return read;
}

std::pair<int, std::vector<InboxMessage>> Store::read_inbox(const std::string& run_id, const std::string& topic,
                                                            int after_seq, int limit) {
  std::pair<int, std::vector<InboxMessage>> inbox{-1, {}};
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    auto rows = tx.exec_prepared(stmt::read_inbox, run_id, topic, after_seq, limit);
    inbox = {-1, {}};
    for (const auto& row : rows) {
      inbox.first = row["messages_sent"].as<int>();
      if (row["seq"].is_null()) continue;
      inbox.second.push_back({row["seq"].as<int>(), row["sent_us"].as<std::int64_t>(),
                              row["message_id"].as<std::string>(),
                              seal_.open(Json::parse(row["payload"].as<std::string>()), "a message's payload")});
    }
  });
  return inbox;
}

std::optional<WorkflowRow> Store::read_one_run(const char* statement, const std::string& key) {
  std::optional<WorkflowRow> row;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    auto r = tx.exec_prepared(statement, key);
    row.reset();
    if (r.empty()) return;
    row = rows::workflow(r[0]);
    row->result = seal_.open(std::move(row->result), "a workflow's result");
    row->error_message = seal_.open_text(std::move(row->error_message), "a workflow's error message");
  });
  return row;
}

std::optional<WorkflowRow> Store::read_workflow(const std::string& id) { return read_one_run(stmt::read_workflow, id); }

std::optional<WorkflowRow> Store::read_run(const std::string& run_id) {
  if (!detail::is_uuid(run_id)) return std::nullopt;
  return read_one_run(stmt::read_run, run_id);
}

bool Store::request_cancel(const std::string& run_id, const std::string& reason) {
  bool running = false;
  pool_.write("request_cancel", [&](pqxx::connection& conn, bool) {
    // Safe to repeat: a run asked already is not asked again.
    pqxx::nontransaction tx(conn);
    running = rows::cancel_asked(
        tx, run_id, tx.exec_prepared1(stmt::request_cancel, run_id, seal_.seal_text(reason), workflows_channel_));
  });
  return running;
}

std::vector<std::string> Store::cancel_children(const std::string& run_id) {
  std::vector<std::string> asked;
  for (;;) {
    std::vector<std::string> batch;
    pool_.write("cancel_children", [&](pqxx::connection& conn, bool) {
      // Safe to repeat: a child asked by an earlier try is not asked again.
      pqxx::nontransaction tx(conn);
      batch.clear();
      for (const auto& row : tx.exec_prepared(stmt::cancel_children, run_id, workflows_channel_)) {
        batch.push_back(row["run_id"].as<std::string>());
      }
    });
    asked.insert(asked.end(), batch.begin(), batch.end());
    if (batch.size() < 1000) return asked;
  }
}

std::vector<std::string> Store::cancel_orphans() {
  std::vector<std::string> cancelled;
  pool_.write("cancel_orphans", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    cancelled.clear();
    for (const auto& row : tx.exec_prepared(stmt::cancel_orphans, workflows_channel_)) {
      cancelled.push_back(row["run_id"].as<std::string>());
    }
  });
  return cancelled;
}

std::map<std::string, TakenId> Store::read_child_ids(const std::set<std::string>& ids) {
  std::map<std::string, TakenId> taken;
  Json list = Json::array();
  for (const auto& id : ids) list.push_back(id);
  const std::string ids_json = list.dump();
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    taken.clear();
    for (const auto& row : tx.exec_prepared(stmt::read_child_ids, ids_json)) {
      taken[row["workflow_id"].as<std::string>()] = {row["run_id"].as<std::string>(),
                                                     run_status_from_text(row["status"].as<std::string>())};
    }
  });
  return taken;
}

std::vector<ClaimedWorkflow> Store::claim_workflows(const std::string& names_json, int limit, const std::string& owner,
                                                    Duration lease) {
  std::vector<ClaimedWorkflow> claimed;
  const std::int64_t first_token = tokens_.take(limit);
  claim_with_recovery(pool_, [&](pqxx::transaction_base& tx, const std::string& token, bool recovering) {
    auto rows = recovering ? tx.exec_prepared(stmt::reclaim_workflows, token)
                           : tx.exec_prepared(stmt::claim_workflows, names_json, limit, owner, lease.count(), token,
                                              first_token);
    claimed.clear();
    for (const auto& row : rows) {
      claimed.push_back(rows::claimed_workflow(row));
      try {
        if (claimed.back().start_data) seal_.open_fields(*claimed.back().start_data, "a workflow's input");
      } catch (const CodecError&) {
        claimed.back().start_data.reset();  // its replay reads the journal, and fails alone
      }
    }
    return !claimed.empty();
  });
  return claimed;
}

JournalRead Store::read_journal(const std::string& run_id, int from_seq) {
  JournalRead read;
  pool_.read([&](pqxx::connection& conn) {
    read = {};
    pqxx::nontransaction tx(conn);
    for (const auto& row : tx.exec_prepared(stmt::read_journal, run_id, from_seq)) {
      read.workflow_id = row["workflow_id"].as<std::string>();
      read.run_id = row["run_id"].as<std::string>();
      read.name = row["workflow_name"].as<std::string>();
      read.replayed_seq = row["replayed_seq"].as<int>();
      if (row["seq"].is_null()) continue;  // the workflow, without events from `from_seq` on
      read.events.push_back(rows::journal_event(row));
      seal_.open_fields(read.events.back().data, "a journal event's data");
    }
  });
  return read;
}

Json Store::tasks_json(const std::vector<NewTask>& tasks) {
  int marked = 0;
  for (const NewTask& t : tasks) marked += t.claim ? 1 : 0;
  std::int64_t next = marked > 0 ? tokens_.take(marked) : 0;
  Json out = Json::array();
  for (const NewTask& t : tasks) {
    Json spec = {{"step", t.step},
                 {"name", t.name},
                 {"input", seal_.seal(t.input)},
                 {"options", options_to_json(t.options)},
                 {"claim", t.claim},
                 {"dropped", t.dropped}};
    if (t.claim) spec["lease_token"] = next++;
    out.push_back(std::move(spec));
  }
  return out;
}

ReplayOutcome Store::commit_replay(const ReplayCommit& c) {
  ReplayOutcome outcome;
  const std::string events = events_json(c.events, seal_).dump();
  const std::string tasks = tasks_json(c.tasks).dump();
  Json received_json = Json::array();
  for (const auto& [seq, step] : c.received) received_json.push_back({seq, step});
  const std::string received = received_json.dump();
  const std::string children = children_json(c.children, seal_).dump();
  // A continued run's result names the next run (the engine's, read by the database): not sealed.
  const std::string result = c.status == RunStatus::completed ? seal_.sealed_dump(c.result) : c.result.dump();
  const std::string error_message = seal_.seal_text(c.error_message);
  std::string published;
  if (seal_.on()) {
    Json sealed = c.published;
    for (Json& set : sealed) set[1] = seal_.seal(set[1]);  // [key, value, step]
    published = sealed.dump();
  } else {
    published = c.published.dump();
  }
  const bool continues = c.status == RunStatus::continued;
  pool_.write("commit_replay", [&](pqxx::connection& conn, bool maybe_committed) {
    outcome = {};
    // One statement in its own implicit transaction, but for a run that continues as new: the next
    // run goes in with it, read in a second statement (see continue_run).
    std::optional<pqxx::nontransaction> single;
    std::optional<pqxx::work> pair;
    pqxx::transaction_base& tx = continues ? static_cast<pqxx::transaction_base&>(pair.emplace(conn))
                                           : static_cast<pqxx::transaction_base&>(single.emplace(conn));
    pqxx::row row;
    try {
      row = tx.exec_prepared1(stmt::commit_replay, c.run_id, c.lease_token, events, std::string(to_text(c.status)),
                              result, c.error_type, error_message, c.seen_seq, c.wake_at_us, tasks, tasks_channel_,
                              ended_channel_, c.claim_owner, c.lease_margin.count(), c.claim_token, c.seen_messages,
                              received, published, events_channel_, children, workflows_channel_,
                              Json(c.dropped).dump(), c.delivers_cancel, app_version_);
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() != refused_commit_state) throw;
      outcome.refused = true;  // nothing was written
      return;
    }
    if (continues && !row["base"].is_null()) {
      tx.exec_prepared1(stmt::continue_run, c.run_id, c.next_run_id, seal_.sealed_dump(c.next_input),
                        workflows_channel_);
      detail::failpoint("replay.before_continue_commit");  // dying here commits neither the end nor the next run
      pair->commit();
      detail::failpoint("replay.after_continue_commit");  // the next run is in: it must go on, once
    }
    outcome.now_us = row["now_us"].as<std::int64_t>();
    if (!row["base"].is_null()) {
      outcome.base = row["base"].as<int>();
      outcome.claimed = leased_at_once(c, row["claimed"], outcome.now_us);
    } else if (maybe_committed && !c.claim_token.empty()) {
      // An earlier try may have committed: its tasks leased at once are ours to run.
      outcome.claimed = reclaim_tasks(tx, c.claim_token, seal_);
    }
  });
  return outcome;
}

std::vector<ClaimedTask> Store::claim_tasks(const std::string& names_json, int limit, const std::string& owner,
                                            Duration lease_margin) {
  std::vector<ClaimedTask> claimed;
  const std::int64_t first_token = tokens_.take(limit);
  claim_with_recovery(pool_, [&](pqxx::transaction_base& tx, const std::string& token, bool recovering) {
    auto rows = recovering ? tx.exec_prepared(stmt::reclaim_tasks, token)
                           : tx.exec_prepared(stmt::claim_tasks, names_json, limit, owner, lease_margin.count(), token,
                                              first_token);
    claimed.clear();
    for (const auto& row : rows) claimed.push_back(opened_task(row, seal_));
    return !claimed.empty();
  });
  return claimed;
}

Json Store::steps_json(const std::vector<const StepCommit*>& steps) {
  Json rows = Json::array();
  for (const StepCommit* c : steps) {
    const ReplayCommit* r = c->replay;
    std::string wf_result = "null";
    if (r) wf_result = r->status == RunStatus::completed ? seal_.sealed_dump(r->result) : r->result.dump();
    rows.push_back(
        {{"task_id", c->task->task_id},
         {"task_run", c->task->run_id},
         {"step", c->task->step},
         {"lease_token", c->task->lease_token},
         {"outcome", to_text(c->succeeded ? TaskStatus::completed : TaskStatus::failed)},
         {"result", c->succeeded ? seal_.sealed_dump(c->result) : c->result.dump()},
         {"error_type", c->error_type},
         {"error_message", seal_.seal_text(c->error_message)},
         {"fp", seal_.on() && c->succeeded && c->task->options.idempotency_key ? Json(seal_.fingerprint(c->task->input))
                                                                               : Json()},
         {"record", c->record_attempt},
         {"expected_seq", r ? c->expected_seq : -1},
         {"replayed_seq", r ? r->replayed_seq : -1},
         {"run_id", r ? Json(c->run_id) : Json()},
         {"claim_token", r ? Json(r->claim_token) : Json()},
         {"events", r ? events_json(r->events, seal_) : Json::array()},
         {"tasks", r ? tasks_json(r->tasks) : Json::array()},
         {"wf_status", to_text(r ? r->status : RunStatus::running)},
         {"wf_result", wf_result},
         {"wf_error_type", r ? r->error_type : std::string()},
         {"wf_error_message", r ? seal_.seal_text(r->error_message) : std::string()},
         {"wake_at_us", r ? r->wake_at_us : -1}});
  }
  return rows;
}

std::vector<StepOutcome> Store::run_complete_steps(pqxx::transaction_base& tx, const char* statement,
                                                   const std::string& rows_text,
                                                   const std::vector<const StepCommit*>& steps,
                                                   const std::string& owner, Duration lease_margin,
                                                   bool maybe_committed, Json& key_waited) {
  std::map<std::int64_t, std::size_t> index;  // task id -> position
  for (std::size_t i = 0; i < steps.size(); ++i) index[steps[i]->task->task_id] = i;
  std::vector<StepOutcome> outcomes(steps.size());
  const auto answer = tx.exec_prepared(statement, rows_text, owner, lease_margin.count(), workflows_channel_,
                                       tasks_channel_, ended_channel_, app_version_);
  for (const auto& row : answer) {
    const std::size_t i = index.at(row["task_id"].as<std::int64_t>());
    const StepCommit& c = *steps[i];
    StepOutcome& outcome = outcomes[i];
    outcome.now_us = row["now_us"].as<std::int64_t>();
    if (row["key_waiters"].as<bool>()) key_waited.push_back(waited_key(*c.task));
    if (row["finished"].as<bool>()) {
      outcome.finish = FinishOutcome::committed;
      outcome.continued = row["continued"].as<bool>();
      if (outcome.continued) {
        outcome.base = row["base"].as<int>();
        outcome.claimed = leased_at_once(*c.replay, row["claimed"], outcome.now_us);
      }
    } else if (maybe_committed && finished_earlier(tx, c)) {
      // Committed by an earlier try whose answer was lost: whatever it leased at once is ours,
      // and whoever waited for its key may have missed the wake-up.
      outcome.finish = FinishOutcome::committed_earlier;
      if (c.replay) outcome.claimed = reclaim_tasks(tx, c.replay->claim_token, seal_);
      if (c.task->options.idempotency_key) key_waited.push_back(waited_key(*c.task));
    }
  }
  return outcomes;
}

std::vector<StepOutcome> Store::complete_steps(const std::vector<const StepCommit*>& steps, const std::string& owner,
                                               Duration lease_margin) {
  const std::string rows_text = steps_json(steps).dump();
  std::vector<StepOutcome> outcomes;
  Json key_waited = Json::array();  // idempotency keys others wait for
  pool_.write("complete_steps", [&](pqxx::connection& conn, bool maybe_committed) {
    key_waited = Json::array();
    pqxx::nontransaction tx(conn);
    outcomes = run_complete_steps(tx, stmt::complete_steps, rows_text, steps, owner, lease_margin, maybe_committed,
                                  key_waited);
  });
  wake_key_waiters(key_waited);
  return outcomes;
}

StepOutcome Store::complete_step_in(pqxx::transaction_base& tx, const char* statement, const StepCommit& step,
                                    const std::string& owner, Duration lease_margin, Json& key_waited) {
  const std::vector<const StepCommit*> steps{&step};
  return run_complete_steps(tx, statement, steps_json(steps).dump(), steps, owner, lease_margin, false, key_waited)
      .front();
}

std::optional<StepOutcome> Store::committed_step(const StepCommit& step) {
  std::optional<StepOutcome> outcome;
  pool_.read([&](pqxx::connection& conn) {
    outcome.reset();
    pqxx::read_transaction tx(conn);
    if (!finished_earlier(tx, step)) return;
    outcome.emplace();
    outcome->finish = FinishOutcome::committed_earlier;
    if (step.replay) outcome->claimed = reclaim_tasks(tx, step.replay->claim_token, seal_);
  });
  if (outcome && step.task->options.idempotency_key) wake_key_waiters(Json::array({waited_key(*step.task)}));
  return outcome;
}

void Store::wake_key_waiters_of(const Json& keys) { wake_key_waiters(keys); }

RetryOutcome Store::retry_task(const ClaimedTask& task, Duration delay, const std::string& error_type,
                               const std::string& error_message) {
  RetryOutcome outcome = RetryOutcome::fenced_off;
  bool key_waiters = false;
  const std::string stored_message = seal_.seal_text(error_message);
  pool_.write("retry_task", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::nontransaction tx(conn);
    auto row = tx.exec_prepared1(stmt::retry_task, task.run_id, task.lease_token, delay.count(), error_type,
                                 stored_message, task.step);
    key_waiters = row["key_waiters"].as<bool>();
    if (row["retried"].as<int>() == 1) {
      outcome = RetryOutcome::retried;
    } else if (row["owned"].as<int>() == 1) {
      outcome = RetryOutcome::past_horizon;
    } else if (maybe_committed && retried_earlier(tx, task)) {
      // An earlier try scheduled the retry and its answer was lost: the retry is ours.
      outcome = RetryOutcome::retried;
      key_waiters = task.options.idempotency_key.has_value();
    } else {
      outcome = RetryOutcome::fenced_off;
    }
  });
  if (key_waiters) wake_key_waiters(Json::array({waited_key(task)}));
  return outcome;
}

HeartbeatOutcome Store::heartbeat(const ClaimedTask& task, Duration lease, const std::string& details) {
  HeartbeatOutcome outcome = HeartbeatOutcome::lease_lost;
  const std::string stored_details = seal_.seal_json_text(details);
  // A repeat of a heartbeat that committed renews the same lease again: no re-read needed.
  pool_.write("heartbeat", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    if (!tx.exec_prepared(stmt::heartbeat, task.run_id, task.lease_token, lease.count(), stored_details, task.step)
             .empty()) {
      outcome = HeartbeatOutcome::kept;
      return;
    }
    auto state = task_state(tx, task);
    outcome =
        state && state->status == TaskStatus::cancelled ? HeartbeatOutcome::cancelled : HeartbeatOutcome::lease_lost;
  });
  return outcome;
}

std::vector<std::int64_t> Store::unwanted_tasks(const std::vector<std::int64_t>& task_ids) {
  std::vector<std::int64_t> unwanted;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    unwanted.clear();
    for (const auto& row : tx.exec_prepared(stmt::unwanted_tasks, Json(task_ids).dump())) {
      unwanted.push_back(row["task_id"].as<std::int64_t>());
    }
  });
  return unwanted;
}

void Store::release_task(const ClaimedTask& task, Duration delay) {
  // Fenced: a repeat after a commit matches nothing, and the task is handed back either way.
  pool_.write("release_task", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    tx.exec_prepared(stmt::release_task, task.run_id, task.lease_token, delay.count(), task.step);
  });
}

int Store::block_task(const ClaimedTask& task, const Json& reason, Duration retry) {
  int times = 0;
  // Fenced: a repeat after a commit matches nothing (0), and the task was handed back either way.
  pool_.write("block_task", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    auto rows = tx.exec_prepared(stmt::block_task, task.run_id, task.lease_token, reason.dump(), app_version_,
                                 retry.count(), task.step);
    times = rows.empty() ? 0 : rows[0]["times"].as<int>();
  });
  return times;
}

bool Store::lock_key_or_wait(const ClaimedTask& task) {
  bool locked = false;
  // A repeat decides the same: a lock we took is ours again, a wait we committed left the lease gone.
  pool_.write("lock_key", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    auto row = tx.exec_prepared1(stmt::lock_key, task.run_id, task.lease_token, task.step);
    locked = row["locked"].as<bool>() && row["owned"].as<bool>();
  });
  return locked;
}

namespace {
// [[activity, key hex, lease token], ...]: the locks these attempts hold.
std::string held_keys_json(const std::vector<const ClaimedTask*>& tasks) {
  Json keys = Json::array();
  for (const ClaimedTask* task : tasks) {
    Json key = waited_key(*task);
    key.push_back(std::to_string(task->lease_token));
    keys.push_back(std::move(key));
  }
  return keys.dump();
}
}  // namespace

void Store::hold_keys(const std::vector<const ClaimedTask*>& tasks, Duration hold) {
  if (tasks.empty()) return;
  const std::string keys = held_keys_json(tasks);
  pool_.write("hold_keys", [&](pqxx::connection& conn, bool) {  // holding again only moves the time
    pqxx::nontransaction tx(conn);
    tx.exec_prepared0(stmt::hold_keys, keys, hold.count());
  });
}

void Store::release_keys(const std::vector<const ClaimedTask*>& tasks) {
  if (tasks.empty()) return;
  const std::string keys = held_keys_json(tasks);
  pool_.write("release_keys", [&](pqxx::connection& conn, bool) {  // a repeat finds nothing to release
    pqxx::nontransaction tx(conn);
    tx.exec_prepared1(stmt::release_keys, keys, tasks_channel_);
  });
}

void Store::wake_key_waiters(const Json& keys) {
  if (keys.empty()) return;
  const std::string ids = keys.dump();
  pool_.write("wake_key_waiters", [&](pqxx::connection& conn, bool) {  // waking twice is harmless
    pqxx::nontransaction tx(conn);
    tx.exec_prepared1(stmt::wake_key_waiters, ids, tasks_channel_);
  });
}

std::optional<Store::ReusableResult> Store::reusable_result(const ClaimedTask& task) {
  std::optional<ReusableResult> found;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    auto rows = tx.exec_prepared(stmt::reusable_result, task.run_id, task.step);
    if (rows.empty()) return;
    const std::string fingerprint = rows[0]["input_fingerprint"].as<std::string>();
    // A fingerprint the engine computed under a codec names its key; an md5 one is compared by the
    // database: with the stored input when that is plaintext, else (a result from before the codec
    // was set) with the plaintext input, sent only for this comparison.
    bool same_input = false;
    if (fingerprint.starts_with("$encoded:")) {
      same_input = seal_.same_input(fingerprint, task.input);
    } else if (!seal_.on()) {
      same_input = rows[0]["same_input"].as<bool>();
    } else {
      same_input = tx.exec_params1("SELECT $1 = md5($2::jsonb::text)", fingerprint, task.input.dump())[0].as<bool>();
    }
    found = ReusableResult{seal_.open(Json::parse(rows[0]["result"].c_str()), "an idempotent result"), same_input,
                           rows[0]["workflow_id"].as<std::string>()};
  });
  return found;
}

int Store::block_run(const std::string& run_id, std::int64_t lease_token, const Json& divergence, Duration retry) {
  int times = 0;
  pool_.write("block_run", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    auto rows = tx.exec_prepared(stmt::block_run, run_id, lease_token, divergence.dump(), app_version_, retry.count());
    times = rows.empty() ? 0 : rows[0]["times"].as<int>();  // 0: the lease was lost (or a lost answer's retry)
  });
  return times;
}

int Store::wake_blocked(const std::string& names_json) {
  int woken = 0;
  pool_.write("wake_blocked", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    woken = tx.exec_prepared1(stmt::wake_blocked, names_json, app_version_)["woken"].as<int>();
  });
  return woken;
}

void Store::engine_alive(const std::string& owner, const std::string& instance, int activity_capacity,
                         int workflow_capacity, Duration alive_for, bool starting) {
  pool_.write("engine_alive", [&](pqxx::connection& conn, bool) {  // an upsert: a second try changes nothing
    pqxx::nontransaction tx(conn);
    tx.exec_prepared0(stmt::engine_alive, owner, instance, app_version_, activity_capacity, workflow_capacity,
                      std::chrono::duration_cast<std::chrono::milliseconds>(alive_for).count(), starting);
  });
}

void Store::engine_stopped(const std::string& owner) {
  pool_.write("engine_stopped", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    tx.exec_prepared0(stmt::engine_stopped, owner);
  });
}

std::int64_t Store::blocked_count(const std::string& names_json) {
  std::int64_t count = 0;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    count = tx.exec_prepared1(stmt::blocked_count, names_json)["blocked"].as<std::int64_t>();
  });
  return count;
}

double Store::queue_age(const std::string& names_json) { return read_age(pool_, stmt::queue_age, names_json); }

double Store::workflow_queue_age(const std::string& names_json) {
  return read_age(pool_, stmt::workflow_queue_age, names_json);
}

}  // namespace durable::pg
