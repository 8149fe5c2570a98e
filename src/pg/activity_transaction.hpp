// Transactional activities (durable/pqxx.hpp): the transaction a body runs in, on a connection of
// its own, committed together with the step's completion (Store::complete_step_in) or not at all.
// A guard row inserted first keeps anything else from committing it (migration 17).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "base/exceptions.hpp"
#include "durable/activity.hpp"
#include "pg/records.hpp"

namespace durable::pg {

class ConnectionPool;
class Store;

// The sessions bodies run their transactions on, one body at a time each: opened when none is
// idle, kept for the next body while healthy. Sessions of their own, not the pool's: the engine's
// planner settings stay off the body's statements, and a long body holds none of the pool.
class TransactionConnections {
 public:
  explicit TransactionConnections(ConnectionPool& pool);
  ~TransactionConnections();

 private:
  friend class ActivityTransaction;
  struct Sessions;
  std::unique_ptr<Sessions> sessions_;
};

// The attempt failed before anything of it committed: the error to settle it with.
struct NotCommitted : std::runtime_error {
  explicit NotCommitted(detail::ErrorInfo e) : std::runtime_error(e.message), error(std::move(e)) {}
  detail::ErrorInfo error;
};

class ActivityTransaction {
 public:
  // Begins the transaction with its guard. Throws what the database threw (nothing ran).
  ActivityTransaction(TransactionConnections& connections, Store& store, std::string activity_name);
  ~ActivityTransaction();  // rolls back unless committed
  ActivityTransaction(const ActivityTransaction&) = delete;
  ActivityTransaction& operator=(const ActivityTransaction&) = delete;

  // Runs a transactional body in the transaction. A body that committed it: TransactionMisuse.
  Json run_body(const detail::ActivityDefinition& def, const ActivityContext& attempt, const Json& input);
  // Rolls the body's writes back (it failed, or its outcome is not wanted).
  void roll_back() noexcept;
  // Commits `step`, the body's success, with the body's writes. Returns committed, or
  // committed_earlier (the commit was in doubt and had gone in), or fenced_off (rolled back: the
  // lease was lost). Throws NotCommitted when the attempt failed and nothing of it committed
  // (TransactionMisuse when the body ended the transaction itself); anything else leaves it to
  // the lease (the commit was in doubt and could not be read back).
  StepOutcome commit(const StepCommit& step, const std::string& owner, Duration lease_margin);

 private:
  // After a commit whose answer was lost: committed_earlier, or NotCommitted.
  StepOutcome read_back(const StepCommit& step, const std::string& why);
  struct Open;
  Store& store_;
  std::string activity_name_;
  std::unique_ptr<Open> open_;
};

}  // namespace durable::pg
