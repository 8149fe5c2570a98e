#include "pg/store_parts.hpp"

#include "base/failpoint.hpp"
#include "base/uuid.hpp"
#include "pg/connection_pool.hpp"
#include "pg/rows.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

namespace store_parts {

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
  for (const auto& row : exec(tx, stmt::reclaim_tasks, claim_token)) tasks.push_back(opened_task(row, seal));
  return tasks;
}

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

pqxx::row exec_start(pqxx::transaction_base& tx, const NewRun& run, const RunOrigin& origin,
                     const FirstReplayArgs& replay) {
  return exec1(tx, stmt::start_workflow, run.id, run.run_id, run.name, run.stored_input, run.channel,
               run.more_started_data, run.owner, run.lease_ms, run.lease_token, origin.started_by, origin.origin,
               run.app_version, origin.queue, origin.concurrency_key, origin.priority, origin.deduplication_key,
               origin.debounce_key, origin.debounce.count(), replay.events, replay.status, replay.result,
               replay.error_type, replay.error_message, replay.wake_at_us, replay.tasks, replay.lease_margin_ms,
               replay.claim_token, replay.tasks_channel, replay.ended_channel);
}

Json events_json(const std::vector<NewEvent>& events, const detail::Sealer& seal) {
  Json out = Json::array();
  for (const NewEvent& e : events) {
    out.push_back({{"kind", to_text(e.kind)}, {"step", e.step}, {"name", e.name}, {"data", seal.seal_fields(e.data)}});
  }
  return out;
}

}  // namespace store_parts

}  // namespace durable::pg
