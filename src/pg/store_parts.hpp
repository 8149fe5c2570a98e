// Helpers that store.cpp (runs and replays) and store_tasks.cpp (activity tasks) share.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/sealer.hpp"
#include "pg/records.hpp"

namespace pqxx {
class field;
class row;
class transaction_base;
}  // namespace pqxx

namespace durable::pg {

class ConnectionPool;

namespace store_parts {

// A claim commits as it answers; if the answer is lost, a blind second claim would strand
// what the first one took until its lease ran out. So a retry first recovers by claim token:
// `claim(tx, token, recovering)` returns whether it found rows.
void claim_with_recovery(ConnectionPool& pool,
                         const std::function<bool(pqxx::transaction_base&, const std::string&, bool)>& claim);

// A claimed task with its user payloads decoded. One that does not decode is still claimed (the
// others of its claim must not wait for its lease to run out): its attempt fails (undecodable),
// or is blocked when the codec lacks the key.
ClaimedTask opened_task(const pqxx::row& row, const detail::Sealer& seal);

// The tasks an earlier try of a claim under `claim_token` leased, read again.
std::vector<ClaimedTask> reclaim_tasks(pqxx::transaction_base& tx, const std::string& claim_token,
                                       const detail::Sealer& seal);

// The tasks a commit leased at once: from its answer's [task_id, step, lease_token] rows.
std::vector<ClaimedTask> leased_at_once(const ReplayCommit& commit, const pqxx::field& claimed, std::int64_t now_us);

// A run for start_workflow.sql to insert: who it is, and the lease it starts with (owner '': none).
struct NewRun {
  std::string id, run_id, name, stored_input, channel;  // channel: the workflows' wake-up
  std::string more_started_data = "{}";                 // more data for its started event
  std::string owner;
  std::int64_t lease_ms = 0, lease_token = 0;
  std::string app_version;
};
// start_workflow.sql's first replay, committed with the start ($19 on): none by default.
struct FirstReplayArgs {
  std::string events = "[]", status = "running", result, error_type, error_message;
  std::int64_t wake_at_us = -1;
  std::string tasks = "[]";
  std::int64_t lease_margin_ms = 0;
  std::string claim_token, tasks_channel, ended_channel;
};
// Runs start_workflow.sql: one row (inserted, notified, lease_token, claimed, now_us).
pqxx::row exec_start(pqxx::transaction_base& tx, const NewRun& run, const RunOrigin& origin,
                     const FirstReplayArgs& replay = {});

// The json of new events as the statements read them.
Json events_json(const std::vector<NewEvent>& events, const detail::Sealer& seal);

}  // namespace store_parts
}  // namespace durable::pg
