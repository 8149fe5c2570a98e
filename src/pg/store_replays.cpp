// Store's operations on replays: claiming runs, reading their journals, committing what a replay
// decided, blocking a run whose replay diverged.
#include <optional>

#include "base/failpoint.hpp"
#include "pg/connection_pool.hpp"
#include "pg/rows.hpp"
#include "pg/statements.hpp"
#include "pg/store.hpp"
#include "pg/store_parts.hpp"

namespace durable::pg {

namespace {

using store_parts::claim_with_recovery;
using store_parts::events_json;
using store_parts::leased_at_once;
using store_parts::reclaim_tasks;

// The json of new children as the statements read them.
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

}  // namespace

std::vector<ClaimedWorkflow> Store::claim_workflows(const std::string& names_json, const std::string& queues_json,
                                                    int limit, const std::string& owner, Duration lease) {
  std::vector<ClaimedWorkflow> claimed;
  const std::int64_t first_token = tokens_.take(limit);
  claim_with_recovery(pool_, [&](pqxx::transaction_base& tx, const std::string& token, bool recovering) {
    auto rows = recovering ? exec(tx, stmt::reclaim_workflows, token)
                           : exec(tx, stmt::claim_workflows, names_json, limit, owner, lease.count(), token,
                                  first_token, queues_json);
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

void Store::release_workflow(const std::string& run_id, std::int64_t lease_token) {
  // Safe to repeat: a lease already given back is not matched again.
  pool_.write(stmt::release_run, [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    exec(tx, stmt::release_run, run_id, lease_token);
  });
}

JournalRead Store::read_journal(const std::string& run_id, int from_seq) {
  JournalRead read;
  pool_.read([&](pqxx::connection& conn) {
    read = {};
    pqxx::nontransaction tx(conn);
    for (const auto& row : exec(tx, stmt::read_journal, run_id, from_seq)) {
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

pqxx::row Store::exec_commit_replay(pqxx::transaction_base& tx, const ReplayCommit& c) {
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
  // Most replays receive, publish, start, drop and deliver nothing: the statement without those parts.
  const bool plain = c.received.empty() && c.published.empty() && c.children.empty() && c.dropped.empty() &&
                     !c.delivers_cancel && c.status != RunStatus::continued;
  return exec1(tx, plain ? stmt::commit_replay_plain : stmt::commit_replay, c.run_id, c.lease_token, events,
               std::string(to_text(c.status)), result, c.error_type, error_message, c.seen_seq, c.wake_at_us, tasks,
               tasks_channel_, ended_channel_, c.claim_owner, c.lease_margin.count(), c.claim_token, c.seen_messages,
               received, published, events_channel_, children, workflows_channel_, Json(c.dropped).dump(),
               c.delivers_cancel, app_version_);
}

ReplayOutcome Store::replay_committed(pqxx::transaction_base& tx, const ReplayCommit& c, const pqxx::row& row,
                                      bool maybe_committed) {
  ReplayOutcome outcome;
  outcome.now_us = row["now_us"].as<std::int64_t>();
  if (!row["base"].is_null()) {
    outcome.base = row["base"].as<int>();
    outcome.claimed = leased_at_once(c, row["claimed"], outcome.now_us);
  } else if (maybe_committed && !c.claim_token.empty()) {
    // An earlier try may have committed: its tasks leased at once are ours to run.
    outcome.claimed = reclaim_tasks(tx, c.claim_token, seal_);
  }
  return outcome;
}

ReplayOutcome Store::commit_replay(const ReplayCommit& c) {
  ReplayOutcome outcome;
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
      row = exec_commit_replay(tx, c);
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() != refused_commit_state) throw;
      outcome.refused = true;  // nothing was written
      return;
    }
    if (continues && !row["base"].is_null()) {
      exec1(tx, stmt::continue_run, c.run_id, c.next_run_id, seal_.sealed_dump(c.next_input), workflows_channel_);
      detail::failpoint("replay.before_continue_commit");  // dying here commits neither the end nor the next run
      pair->commit();
      detail::failpoint("replay.after_continue_commit");  // the next run is in: it must go on, once
    }
    outcome = replay_committed(tx, c, row, maybe_committed);
  });
  return outcome;
}

int Store::block_run(const std::string& run_id, std::int64_t lease_token, const Json& divergence, Duration retry) {
  int times = 0;
  pool_.write("block_run", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    auto rows = exec(tx, stmt::block_run, run_id, lease_token, divergence.dump(), app_version_, retry.count());
    times = rows.empty() ? 0 : rows[0]["times"].as<int>();  // 0: the lease was lost (or a lost answer's retry)
  });
  return times;
}

int Store::wake_blocked(const std::string& names_json) {
  int woken = 0;
  pool_.write("wake_blocked", [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    woken = exec1(tx, stmt::wake_blocked, names_json, app_version_)["woken"].as<int>();
  });
  return woken;
}

}  // namespace durable::pg
