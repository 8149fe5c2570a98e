// Transactional bodies that run at about the same time share one transaction (a group), as group
// commit shares one statement among other activities: each body runs under a SAVEPOINT of its
// own (one that fails rolls back to it, alone), and the group's steps are completed by one
// complete_steps statement and one COMMIT. The bodies of a group run one after another on its
// session: a member holds the session (its turn) from its SAVEPOINT until its body returned and
// its lease was checked (or it rolled back). The member whose leaving empties the group commits
// it for all.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <vector>

#include "base/exceptions.hpp"
#include "pg/activity_transaction.hpp"
#include "pg/records.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

class ConnectionPool;
class Store;

// The sessions groups run on, one group at a time each, and the group new members join.
struct TransactionConnections::Sessions {
  explicit Sessions(ConnectionPool& p);
  ConnectionPool& pool;
  // Behind a transaction pooler: our statements' texts under their prefixed names, run unprepared.
  std::shared_ptr<const StatementTexts> unprepared;
  std::mutex mutex;  // guards `idle`, `open_group` and every group's state
  std::vector<std::unique_ptr<pqxx::connection>> idle;
  std::shared_ptr<class TransactionGroup> open_group;  // the group new members join

  std::unique_ptr<pqxx::connection> take();
  void give_back(std::unique_ptr<pqxx::connection> conn);
};

// Statement `name` of ours, as a body's session knows it (its own prepared statements keep their names).
std::string ours(const char* name);

// What became of a step handed in to its group.
struct GroupOutcome {
  enum class Kind {
    committed,    // `step` says how (committed; or fenced_off: its lease was lost, nothing of it committed)
    in_doubt,     // the answer of the COMMIT was lost (`why`): read the step back
    failed,       // nothing of it committed; `error` fails the attempt
    handed_back,  // another member's failure took the group down: nothing committed, the attempt not at fault
  };
  Kind kind = Kind::failed;
  StepOutcome step;
  std::string why;
  detail::ErrorInfo error;
};

class TransactionGroup {
 public:
  TransactionGroup(TransactionConnections::Sessions& sessions, Store& store);
  ~TransactionGroup();
  TransactionGroup(const TransactionGroup&) = delete;
  TransactionGroup& operator=(const TransactionGroup&) = delete;

  // Joins the group open to new members, or opens one, and waits for this member's turn. A
  // step of `run_id` joins no group that has a step of its run (complete_steps finishes one step
  // per workflow), and one kept waiting behind a slow body starts a group of its own.
  static std::shared_ptr<TransactionGroup> join(TransactionConnections::Sessions& sessions, Store& store,
                                                const std::string& run_id);
  // With the turn: begins the group's transaction when this is its first body, then sets this
  // body's SAVEPOINT. Throws what the database threw, having left the group.
  void begin_member(const std::string& run_id);
  pqxx::work& work() { return *work_; }
  // Rolls this member's writes back and leaves the group (its turn ends).
  void roll_back(const std::string& run_id) noexcept;
  // After the body returned: ends the turn, the member still in the group (sealed, true) when
  // the transaction is still the one its guard began. Otherwise the body ended it (misuse,
  // false). Throws, having rolled back and left, when the body left the transaction failed (it
  // caught an error and went on). A lease lost by then shows at the commit.
  bool seal(const std::string& run_id);
  // A sealed member hands its step in and waits until the group has committed or failed,
  // renewing its task's lease meanwhile.
  GroupOutcome hand_in(const StepCommit& step, const std::string& owner, Duration lease_margin);
  // A sealed member whose outcome is not wanted: its writes cannot be taken out alone, so
  // nothing of the group commits (the others are handed back).
  void withdraw(const std::string& run_id) noexcept;

 private:
  struct Part {
    const StepCommit* step;
    std::optional<GroupOutcome> outcome;
  };
  using Lock = std::unique_lock<std::mutex>;
  using Clock = std::chrono::steady_clock;
  void end_turn(Lock& lock);
  void set_opening(bool opening);
  // The member is gone from the group: with `part`, its step waits for the commit. The member
  // whose leaving empties the group commits it (outside the lock).
  void leave_and_commit(Lock& lock, const std::string& run_id, Part* part);
  // The transaction is lost (its session failed, or a body ended it): nothing of it commits. By
  // the turn's holder only: no one else uses the session.
  void break_up(Lock& lock);
  bool roll_back_to_savepoint() noexcept;
  // Whether the session is still in the transaction its guard began (guard_held.sql).
  bool guard_held();
  bool abort() noexcept;  // false: the session is not fit for another group
  void commit_all() noexcept;
  // Commits the parts; an outcome for each, and whether the session is fit for another group.
  bool commit_parts(std::vector<GroupOutcome>& outcomes, Json& key_waited);
  void end_with(const std::vector<GroupOutcome>& outcomes, bool session_clean);

  TransactionConnections::Sessions& sessions_;
  Store& store_;
  std::unique_ptr<pqxx::connection> conn_;
  std::optional<pqxx::work> work_;
  // Guarded by sessions_.mutex:
  std::set<std::string> runs_;  // of its members
  int members_ = 0;             // joined so far (each a savepoint)
  int pending_ = 0;             // joined and neither handed its step in nor gone
  bool turn_taken_ = false;
  bool opening_ = false;                              // the turn's holder opens the group's session
  std::chrono::steady_clock::time_point turn_since_;  // when the turn's holder got it (or its session)
  bool ended_ = false;
  bool doomed_ = false;       // a sealed member withdrew: the group rolls back
  std::vector<Part*> parts_;  // steps handed in
  std::condition_variable changed_;
  // Set by the turn holder. Savepoints are named durable_1, durable_2, ... and never released:
  // rolling back to one takes only the writes after it away.
  int savepoints_ = 0;  // set so far
  int mine_ = 0;        // the turn holder's: its body's writes come after it
  int next_ = 0;        // set for the next turn holder already (0: none)
  std::string owner_;
  Duration lease_margin_{0};
};

}  // namespace durable::pg
