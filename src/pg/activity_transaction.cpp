#include "pg/activity_transaction.hpp"

#include <fmt/format.h>

#include <chrono>
#include <pqxx/pqxx>
#include <thread>

#include "base/log.hpp"
#include "durable/errors.hpp"
#include "durable/pqxx.hpp"
#include "pg/connection_pool.hpp"
#include "pg/store.hpp"
#include "pg/transaction_group.hpp"

namespace durable::pg {

namespace {

// SQLSTATE of refuse_unguarded_commit (migration 17): the body committed its transaction.
constexpr const char* unguarded_commit_state = "DUR02";

TransactionMisuse misuse(const std::string& activity) {
  return TransactionMisuse(
      fmt::format("activity '{}' ended its transaction itself (commit(), abort(), or COMMIT / ROLLBACK in SQL): a "
                  "transactional activity returns, and durable commits its writes together with its result; nothing of "
                  "this attempt was committed",
                  activity));
}

}  // namespace

TransactionConnections::TransactionConnections(ConnectionPool& pool) : sessions_(std::make_unique<Sessions>(pool)) {}
TransactionConnections::~TransactionConnections() = default;

ActivityTransaction::ActivityTransaction(TransactionConnections& connections, Store& store, const ClaimedTask& task)
    : store_(store), activity_name_(task.name), run_id_(task.run_id) {
  // As the pool's own work: a session lost (an idle one may have died with a restart of the
  // server) or on a server that takes no writes (a failover) is replaced until unavailable_after.
  // Nothing ran yet: giving up hands the task back, it fails no attempt.
  TransactionConnections::Sessions& sessions = *connections.sessions_;
  const auto deadline = std::chrono::steady_clock::now() + sessions.pool.unavailable_after();
  auto pause = std::chrono::milliseconds{20};
  for (int attempt = 1;; ++attempt) {
    std::string why;
    auto group = TransactionGroup::join(sessions, store_, run_id_);
    try {
      group->begin_member(run_id_);
      group_ = std::move(group);
      state_ = State::turn;
      return;
    } catch (const NoWritableServer& e) {
      why = e.what();
    } catch (const pqxx::broken_connection& e) {
      why = e.what();
    }
    if (std::chrono::steady_clock::now() + pause > deadline) {
      throw DatabaseUnavailable(
          fmt::format("cannot open the transaction of activity '{}' after {} tries: {}", activity_name_, attempt, why));
    }
    detail::logger().debug("opening the transaction of activity '{}' again (try {}): {}", activity_name_, attempt, why);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds{1000});
  }
}

ActivityTransaction::~ActivityTransaction() { roll_back(); }

Json ActivityTransaction::run_body(const detail::ActivityDefinition& def, const ActivityContext& attempt,
                                   const Json& input, const std::function<void(const Json&)>& check) {
  TransactionContext ctx(attempt, group_->work());
  Json result;
  try {
    result = def.run_in_transaction(ctx, input);
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == unguarded_commit_state) throw misuse(activity_name_);
    throw;
  }
  // Before its turn ends: once the next body has written after it, it cannot be rolled back alone.
  check(result);
  // Its turn on the shared session ends here (the next body may start), unless this throws.
  state_ = State::left;
  if (!group_->seal(run_id_)) throw misuse(activity_name_);
  state_ = State::sealed;
  return result;
}

void ActivityTransaction::roll_back() noexcept {
  if (state_ == State::turn) group_->roll_back(run_id_);
  if (state_ == State::sealed) group_->withdraw(run_id_);
  state_ = State::left;
}

StepOutcome ActivityTransaction::commit(const StepCommit& step, const std::string& owner, Duration lease_margin) {
  state_ = State::left;
  GroupOutcome outcome = group_->hand_in(step, owner, lease_margin);
  switch (outcome.kind) {
    case GroupOutcome::Kind::committed: break;
    case GroupOutcome::Kind::in_doubt: return read_back(step, outcome.why);
    case GroupOutcome::Kind::failed: throw NotCommitted(outcome.error);
    case GroupOutcome::Kind::handed_back:
      throw NotCommitted({"durable::DatabaseUnavailable",
                          "another body that shared the transaction failed it; nothing of this attempt committed"},
                         true);
  }
  return std::move(outcome.step);
}

StepOutcome ActivityTransaction::read_back(const StepCommit& step, const std::string& why) {
  detail::logger().info("the commit of activity '{}' (task {}) is in doubt ({}); reading it back", activity_name_,
                        step.task->task_id, why);
  if (auto committed = store_.committed_step(step)) return *committed;
  throw NotCommitted({"durable::DatabaseUnavailable",
                      fmt::format("the connection was lost as the step committed, and it had not: {}", why)});
}

}  // namespace durable::pg
