// Store's operations on runs: starting them, reading them, messages and events, cancel requests, and
// the list of live engines. Replays are in store_replays.cpp, activity tasks in store_tasks.cpp.
#include "pg/store.hpp"

#include <map>

#include "base/failpoint.hpp"
#include "base/uuid.hpp"
#include "pg/connection_pool.hpp"
#include "pg/rows.hpp"
#include "pg/statements.hpp"
#include "pg/store_parts.hpp"

namespace durable::pg {

namespace {

template <typename... Params>
double read_age(ConnectionPool& pool, const char* statement, const Params&... params) {
  double age = 0;
  pool.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    age = exec1(tx, statement, params...)["age"].template as<double>();
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
                                     Duration lease, FirstReplay* first) {
  return insert_run(id, run_id, name, input, origin, {}, owner, lease, first);
}

Store::Started Store::reuse_workflow_id(const std::string& id, const std::string& run_id, const std::string& name,
                                        const Json& input, const RunOrigin& origin, const std::string& replaceable,
                                        const std::string& owner, Duration lease, FirstReplay* first) {
  return insert_run(id, run_id, name, input, origin, replaceable, owner, lease, first);
}

Store::Started Store::insert_run(const std::string& id, const std::string& run_id, const std::string& name,
                                 const Json& input, const RunOrigin& origin, const std::string& replaceable,
                                 const std::string& owner, Duration lease, FirstReplay* first) {
  Started started;
  const std::string stored_input = seal_.sealed_dump(input);
  const std::int64_t token = owner.empty() ? 0 : tokens_.take(1);
  auto lease_it = [&](std::int64_t lease_token, std::int64_t now_us) {
    started.leased = ClaimedWorkflow{id, run_id, name, 1, lease_token, now_us, Json{{"input", input}}};
  };
  // After a lost answer, an earlier try may have inserted the run: then it is ours, and so is its
  // lease if that still holds. A run of ours whose lease went with a first replay committed in the
  // same transaction: the tasks that replay leased at once are ours to run.
  auto find_own = [&](pqxx::transaction_base& tx) {
    auto own = exec(tx, stmt::own_start, id, run_id, owner, token);
    started.inserted = !own.empty();
    if (!started.inserted) return;
    if (!own[0]["lease_token"].is_null()) {
      lease_it(own[0]["lease_token"].as<std::int64_t>(), own[0]["now_us"].as<std::int64_t>());
    } else if (first && !first->planned_claim_token().empty()) {
      started.replayed = ReplayOutcome{};
      started.replayed->claimed = store_parts::reclaim_tasks(tx, first->planned_claim_token(), seal_);
    }
  };
  // With `first`: its first replay, decided at the database's time now, goes in with the start.
  auto insert = [&](pqxx::transaction_base& tx, bool maybe_committed) {
    started = {};
    if (maybe_committed && first) {
      find_own(tx);  // before deciding again: an earlier try's claim token names the tasks it leased
      if (started.inserted) return;
    }
    std::optional<ReplayCommit> commit;
    store_parts::FirstReplayArgs replay;
    std::int64_t now_us = 0;
    if (first) {
      now_us = exec1(tx, stmt::db_now_us)["now_us"].as<std::int64_t>();
      commit = first->plan(ClaimedWorkflow{id, run_id, name, 1, token, now_us, Json{{"input", input}}});
      if (commit) replay = first_replay_args(*commit);
    }
    if (commit) detail::failpoint("start.before_commit");  // dying here leaves neither the start nor its replay
    const store_parts::NewRun run{id,   run_id, name,          stored_input, workflows_channel_,
                                  "{}", owner,  lease.count(), token,        app_version_};
    const auto row = store_parts::exec_start(tx, run, origin, replay);
    started.inserted = row["inserted"].as<int>() == 1;
    if (started.inserted && commit) {
      started.replayed = ReplayOutcome{1, store_parts::leased_at_once(*commit, row["claimed"], now_us), now_us};
    } else if (started.inserted && !row["lease_token"].is_null()) {
      lease_it(row["lease_token"].as<std::int64_t>(), row["now_us"].as<std::int64_t>());
    } else if (!started.inserted && maybe_committed && !first) {
      find_own(tx);
    }
  };
  if (replaceable.empty()) {
    pool_.write("start_workflow", [&](pqxx::connection& conn, bool maybe_committed) {
      pqxx::nontransaction tx(conn);
      insert(tx, maybe_committed);
    });
    if (started.replayed) detail::failpoint("start.after_commit");  // in: the run goes on, its first step once
    return started;
  }
  pool_.write("reuse_workflow_id", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    if (exec(tx, stmt::retire_run, id, replaceable).empty()) {
      started = {};
      if (maybe_committed) find_own(tx);
      return;  // rolled back: nothing written
    }
    insert(tx, false);                  // the id has room now; a deduplication or debounce key may still be held
    if (started.inserted) tx.commit();  // else rolled back: the earlier run stays the latest
  });
  if (started.replayed) detail::failpoint("start.after_commit");
  return started;
}

store_parts::FirstReplayArgs Store::first_replay_args(const ReplayCommit& c) {
  store_parts::FirstReplayArgs args;
  args.events = store_parts::events_json(c.events, seal_).dump();
  args.status = std::string(to_text(c.status));
  args.result = c.status == RunStatus::completed ? seal_.sealed_dump(c.result) : c.result.dump();
  args.error_type = c.error_type;
  args.error_message = seal_.seal_text(c.error_message);
  args.wake_at_us = c.wake_at_us;
  args.tasks = tasks_json(c.tasks).dump();
  args.lease_margin_ms = c.lease_margin.count();
  args.claim_token = c.claim_token;
  args.tasks_channel = tasks_channel_;
  args.ended_channel = ended_channel_;
  return args;
}

namespace {
std::optional<FoundRun> found_run(const pqxx::result& rows) {
  if (rows.empty()) return std::nullopt;
  return FoundRun{rows[0]["workflow_id"].as<std::string>(), rows[0]["run_id"].as<std::string>(),
                  rows[0]["status"].as<std::string>()};
}
}  // namespace

std::optional<FoundRun> Store::debounce_into(const std::string& name, const Json& input, const RunOrigin& origin) {
  std::optional<FoundRun> into;
  const std::string stored_input = seal_.sealed_dump(input);
  pool_.write(stmt::debounce_into, [&](pqxx::connection& conn, bool) {  // a repeat moves it the same way
    pqxx::nontransaction tx(conn);
    into = found_run(exec(tx, stmt::debounce_into, origin.queue, origin.debounce_key, name, origin.debounce.count(),
                          stored_input, origin.debounce_keeps_first));
  });
  return into;
}

std::optional<FoundRun> Store::deduplicated_run(const std::string& queue, const std::string& key) {
  std::optional<FoundRun> holder;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    holder = found_run(exec(tx, stmt::deduplicated_run, queue, key));
  });
  return holder;
}

SendOutcome Store::send_message(const std::string& workflow_id, const std::string& topic, const Json& payload,
                                const std::string& message_id, const std::string& idempotency_key) {
  SendOutcome outcome;
  const std::string body = seal_.sealed_dump(payload);
  pool_.write("send_message", [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::nontransaction tx(conn);
    auto send = [&] {
      auto row =
          exec1(tx, stmt::send_message, workflow_id, topic, body, message_id, idempotency_key, workflows_channel_);
      outcome = {};
      if (!row["status"].is_null()) outcome.status = run_status_from_text(row["status"].as<std::string>());
      outcome.sent = row["sent"].as<int>() == 1;
      if (!row["existing_id"].is_null()) outcome.existing_id = row["existing_id"].as<std::string>();
    };
    if (maybe_committed) {
      // The answer of an earlier try was lost: it may have sent this very message.
      if (!exec(tx, stmt::own_message, workflow_id, message_id).empty()) {
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
    auto rows = exec(tx, stmt::read_event, run_id, key);
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
    auto rows = exec(tx, stmt::read_inbox, run_id, topic, after_seq, limit);
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
    auto r = exec(tx, statement, key);
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
    running = rows::cancel_asked(tx, run_id,
                                 exec1(tx, stmt::request_cancel, run_id, seal_.seal_text(reason), workflows_channel_));
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
      for (const auto& row : exec(tx, stmt::cancel_children, run_id, workflows_channel_)) {
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
    for (const auto& row : exec(tx, stmt::cancel_orphans, workflows_channel_)) {
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
    for (const auto& row : exec(tx, stmt::read_child_ids, ids_json)) {
      taken[row["workflow_id"].as<std::string>()] = {row["run_id"].as<std::string>(),
                                                     run_status_from_text(row["status"].as<std::string>())};
    }
  });
  return taken;
}

void Store::engine_alive(const std::string& owner, const std::string& instance, int activity_capacity,
                         int workflow_capacity, Duration alive_for, bool starting) {
  pool_.write("engine_alive", [&](pqxx::connection& conn, bool) {  // an upsert: a second try changes nothing
    pqxx::nontransaction tx(conn);
    exec0(tx, stmt::engine_alive, owner, instance, app_version_, activity_capacity, workflow_capacity,
          std::chrono::duration_cast<std::chrono::milliseconds>(alive_for).count(), starting);
  });
}

void Store::engine_stopped(const std::string& owner) {
  pool_.write("engine_stopped", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    exec0(tx, stmt::engine_stopped, owner);
  });
}

std::int64_t Store::blocked_count(const std::string& names_json) {
  std::int64_t count = 0;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    count = exec1(tx, stmt::blocked_count, names_json)["blocked"].as<std::int64_t>();
  });
  return count;
}

double Store::queue_age(const std::string& names_json, const std::string& queues_json) {
  return read_age(pool_, stmt::queue_age, names_json, queues_json);
}

double Store::workflow_queue_age(const std::string& names_json, const std::string& queues_json) {
  return read_age(pool_, stmt::workflow_queue_age, names_json, queues_json);
}

}  // namespace durable::pg
