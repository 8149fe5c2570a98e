// Transactional activities: an activity whose body takes a TransactionContext& runs in a
// transaction on the engine's own database, and its writes commit in that transaction together
// with its journaled result (and the workflow's next step). So they happen exactly once, which
// no idempotency key can promise. The one public header that includes libpqxx: link
// durable::pqxx (docs/transactions.md).
//
//   struct Deposit {
//     static constexpr auto name = "deposit";
//     int operator()(durable::TransactionContext& ctx, const Transfer& t) const {
//       ctx.transaction().exec_params0("UPDATE accounts SET cents = cents + $2 WHERE id = $1", t.to, t.cents);
//       return t.cents;
//     }
//   };
#pragma once

#include <memory>
#include <pqxx/pqxx>
#include <utility>

#include "durable/activity.hpp"

namespace durable {

// What a transactional activity's body sees: its attempt, as any activity, and its transaction.
// The body reads and writes through transaction() and returns; durable commits. An exception
// rolls its writes back and fails the attempt (retried under its policy, serialization failures
// and deadlocks included). The body must not commit or abort the transaction, nor end it with SQL
// (COMMIT, ROLLBACK): that fails the activity with TransactionMisuse and commits nothing of it.
// The transaction is READ COMMITTED, on a connection of the engine's used by one body at a time,
// and may be shared with other transactional bodies that run at about the same time, each under
// a savepoint of its own (docs/transactions.md: what that changes for SET LOCAL).
class TransactionContext : public ActivityContext {
 public:
  // The attempt's context with the transaction it runs in (the engine builds it for each attempt).
  TransactionContext(const ActivityContext& attempt, pqxx::work& transaction)
      : ActivityContext(attempt), transaction_(transaction) {}

  pqxx::work& transaction() const { return transaction_; }

 private:
  pqxx::work& transaction_;
};

}  // namespace durable
