// Transactional activities (durable/pqxx.hpp): the transaction a body runs in, committed together
// with the step's completion or not at all. Bodies that run at about the same time share one
// (pg/transaction_group.hpp), each under a savepoint of its own. A guard row inserted first keeps
// anything else from committing it (migration 17).
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "base/exceptions.hpp"
#include "durable/activity.hpp"
#include "pg/records.hpp"

namespace durable::pg {

class ConnectionPool;
class Store;
class TransactionGroup;

// The sessions bodies run their transactions on, one transaction at a time each: opened when none
// is idle, kept for the next while healthy. Sessions of their own, not the pool's: the engine's
// planner settings stay off the body's statements, and a long body holds none of the pool.
class TransactionConnections {
 public:
  explicit TransactionConnections(ConnectionPool& pool);
  ~TransactionConnections();
  struct Sessions;

 private:
  friend class ActivityTransaction;
  std::unique_ptr<Sessions> sessions_;
};

// The attempt failed before anything of it committed: the error to settle it with. Or, when
// `handed_back`, another body's failure took the transaction it shared down: the task is handed
// back, the attempt not counted.
struct NotCommitted : std::runtime_error {
  explicit NotCommitted(detail::ErrorInfo e, bool back = false)
      : std::runtime_error(e.message), error(std::move(e)), handed_back(back) {}
  detail::ErrorInfo error;
  bool handed_back;
};

class ActivityTransaction {
 public:
  // Joins a shared transaction for `task` and waits for its turn on its session. Throws what the
  // database threw (nothing ran).
  ActivityTransaction(TransactionConnections& connections, Store& store, const ClaimedTask& task);
  ~ActivityTransaction();  // rolls back unless committed
  ActivityTransaction(const ActivityTransaction&) = delete;
  ActivityTransaction& operator=(const ActivityTransaction&) = delete;

  // Runs a transactional body in the transaction, then `check` on its result (what it throws
  // fails the body), then lets the next body have the session. A body that ended the
  // transaction: TransactionMisuse.
  Json run_body(const detail::ActivityDefinition& def, const ActivityContext& attempt, const Json& input,
                const std::function<void(const Json&)>& check);
  // Rolls the body's writes back (it failed, or its outcome is not wanted). After the body
  // returned, that takes the bodies it shared the transaction with back too (handed back).
  void roll_back() noexcept;
  // Commits `step`, the body's success, with the body's writes (and those of the bodies sharing
  // the transaction). Returns committed, or committed_earlier (the commit was in doubt and had
  // gone in), or fenced_off (rolled back: the lease was lost). Throws NotCommitted when nothing of
  // the attempt committed (TransactionMisuse when the body ended the transaction itself); anything
  // else leaves it to the lease (the commit was in doubt and could not be read back).
  StepOutcome commit(const StepCommit& step, const std::string& owner, Duration lease_margin);

 private:
  // After a commit whose answer was lost: committed_earlier, or NotCommitted.
  StepOutcome read_back(const StepCommit& step, const std::string& why);
  Store& store_;
  std::string activity_name_;
  std::string run_id_;
  std::shared_ptr<TransactionGroup> group_;
  enum class State {
    left,    // not in a group (any more)
    turn,    // holds the session: its body runs
    sealed,  // its body returned: its step is awaited by the group
  };
  State state_ = State::left;
};

}  // namespace durable::pg
