#include "pg/transaction_group.hpp"

#include <fmt/format.h>

#include "base/failpoint.hpp"
#include "base/log.hpp"
#include "pg/connection_pool.hpp"
#include "pg/store.hpp"

namespace durable::pg {

namespace {

const std::string prefix = "durable_";
const std::vector<std::string> our_statements = {stmt::open_guard, stmt::guard_held, stmt::close_guard,
                                                 stmt::complete_steps};

// At most this many bodies a group: their savepoints stay within the subtransactions PostgreSQL
// keeps in shared memory per session (64), and a group's first step waits for at most 15 others.
constexpr int max_members = 16;
// A member kept this long from its turn (a slow body holds it) starts a group of its own.
constexpr auto turn_wait = std::chrono::milliseconds{10};
// SQLSTATE of a SAVEPOINT outside a transaction block: a body ended the transaction with SQL.
constexpr const char* no_transaction_state = "25P01";
// SQLSTATE of EXECUTE of a statement the session does not have.
constexpr const char* undefined_statement_state = "26000";

std::shared_ptr<const StatementTexts> prefixed(const std::shared_ptr<const StatementTexts>& texts) {
  if (!texts) return nullptr;
  auto ours = std::make_shared<StatementTexts>();
  for (const auto& name : our_statements) ours->emplace(prefix + name, texts->at(name));
  return ours;
}

GroupOutcome outcome_of(GroupOutcome::Kind kind) {
  GroupOutcome o;
  o.kind = kind;
  return o;
}

}  // namespace

std::string ours(const char* name) { return prefix + name; }

TransactionConnections::Sessions::Sessions(ConnectionPool& p) : pool(p), unprepared(prefixed(p.unprepared_texts())) {}

std::unique_ptr<pqxx::connection> TransactionConnections::Sessions::take() {
  {
    std::lock_guard lock(mutex);
    if (!idle.empty()) {
      auto conn = std::move(idle.back());
      idle.pop_back();
      return conn;
    }
  }
  auto conn = pool.open();
  if (!unprepared) {
    prepare_statements(*conn, pool.schema(), our_statements, prefix);
    // Run by SQL EXECUTE too, which finds only what the server has (libpqxx prepares at first use).
    for (const char* name : {stmt::open_guard, stmt::guard_held}) conn->prepare_now(ours(name));
  }
  return conn;
}

void TransactionConnections::Sessions::give_back(std::unique_ptr<pqxx::connection> conn) {
  std::lock_guard lock(mutex);
  idle.push_back(std::move(conn));
}

TransactionGroup::TransactionGroup(TransactionConnections::Sessions& sessions, Store& store)
    : sessions_(sessions), store_(store) {}

TransactionGroup::~TransactionGroup() {
  work_.reset();  // rolls back what is still open
}

std::shared_ptr<TransactionGroup> TransactionGroup::join(TransactionConnections::Sessions& sessions, Store& store,
                                                         const std::string& run_id) {
  Lock lock(sessions.mutex);
  for (;;) {
    std::shared_ptr<TransactionGroup> g = sessions.open_group;
    if (!g || g->members_ >= max_members || g->runs_.contains(run_id)) {
      g = std::make_shared<TransactionGroup>(sessions, store);
      sessions.open_group = g;
    }
    g->runs_.insert(run_id);
    ++g->members_;
    ++g->pending_;
    // It waits as long as the body in the turn has run for less than turn_wait (a session being
    // opened, at an engine's start, is no slow body).
    const auto free = [&] { return !g->turn_taken_ || g->ended_; };
    while (!free() && (g->opening_ || Clock::now() < g->turn_since_ + turn_wait)) {
      g->changed_.wait_until(lock, g->opening_ ? Clock::now() + turn_wait : g->turn_since_ + turn_wait);
    }
    if (free() && !g->ended_) {
      g->turn_taken_ = true;
      g->turn_since_ = Clock::now();
      return g;
    }
    // Behind a body that takes long, or the group is gone: this one, and those after it, go on
    // in another group. The turn's holder is still in this one, so it is not left empty.
    g->runs_.erase(run_id);
    --g->pending_;
    if (sessions.open_group == g) sessions.open_group = nullptr;
  }
}

void TransactionGroup::begin_member(const std::string& run_id) {
  const bool earlier_bodies = savepoints_ > 0;  // their writes are in the transaction
  try {
    if (!work_) {
      set_opening(true);
      conn_ = sessions_.take();
      set_opening(false);
      work_.emplace(*conn_);
      try {
        if (sessions_.unprepared) {
          const UnpreparedScope unprepared(*conn_, sessions_.unprepared.get());
          exec0(*work_, ours(stmt::open_guard).c_str());
        } else {  // one round trip for the guard and the first body's savepoint
          // built SQL: a statement's name and a savepoint's name from a counter; no value
          work_->exec0(fmt::format("EXECUTE {}; SAVEPOINT durable_{}", ours(stmt::open_guard), savepoints_ + 1));
          next_ = ++savepoints_;
        }
      } catch (const pqxx::sql_error& e) {
        work_.reset();
        // libpqxx reconnected an idle session that had died (a server restart) without what we
        // prepare by SQL: as a lost session, replaced.
        if (e.sqlstate() == undefined_statement_state) throw pqxx::broken_connection(e.what());
        if (takes_no_writes(*conn_) == false) throw;  // the statement's own fault
        throw NoWritableServer(fmt::format("the server takes no writes: {}", e.what()));
      }
    }
    if (next_ == 0) {
      // built SQL: a savepoint's name from a counter; no value
      work_->exec0(fmt::format("SAVEPOINT durable_{}", savepoints_ + 1));
      next_ = ++savepoints_;
    }
    mine_ = std::exchange(next_, 0);
  } catch (...) {
    Lock lock(sessions_.mutex);
    opening_ = false;
    if (earlier_bodies) {
      break_up(lock);
    } else {
      work_.reset();  // nothing in it yet: the next member begins again, on another session
      conn_.reset();
      savepoints_ = next_ = 0;
    }
    end_turn(lock);
    leave_and_commit(lock, run_id, nullptr);
    throw;
  }
}

void TransactionGroup::set_opening(bool opening) {
  const std::lock_guard lock(sessions_.mutex);
  opening_ = opening;
  turn_since_ = Clock::now();  // its body starts when the session is open
}

bool TransactionGroup::roll_back_to_savepoint() noexcept {
  try {
    // built SQL: a savepoint's name from a counter; no value
    work_->exec0(fmt::format("ROLLBACK TO SAVEPOINT durable_{}", mine_));
    next_ = mine_;  // kept: what the next body writes goes after it
    return true;
  } catch (...) {
    return false;  // the transaction is gone (the body ended it, or the session failed)
  }
}

void TransactionGroup::roll_back(const std::string& run_id) noexcept {
  const bool rolled_back = work_ && roll_back_to_savepoint();
  Lock lock(sessions_.mutex);
  if (!rolled_back) break_up(lock);
  end_turn(lock);
  leave_and_commit(lock, run_id, nullptr);
}

bool TransactionGroup::guard_held() {
  if (sessions_.unprepared) {
    const UnpreparedScope unprepared(*conn_, sessions_.unprepared.get());
    return exec1(*work_, ours(stmt::guard_held).c_str())[0].as<bool>();
  }
  // One round trip for the check and the next body's savepoint, set first: the check writes
  // nothing, and rolling back to this body's savepoint takes the next one away too.
  // built SQL: a savepoint's name from a counter, and a statement's name; no value
  const pqxx::result r =
      work_->exec(fmt::format("SAVEPOINT durable_{}; EXECUTE {}", savepoints_ + 1, ours(stmt::guard_held)));
  next_ = ++savepoints_;
  return r.at(0)[0].as<bool>();
}

bool TransactionGroup::seal(const std::string& run_id) {
  bool guarded = false, rolled_back = false;
  std::exception_ptr failed;
  try {
    guarded = guard_held();
  } catch (const pqxx::usage_error&) {
    // The body committed or aborted the transaction through libpqxx: misuse, as below.
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() != no_transaction_state) {
      // The body left its transaction failed (it caught an error and went on): it failed.
      failed = std::current_exception();
      rolled_back = roll_back_to_savepoint();
    }  // else it ran COMMIT or ROLLBACK: misuse, as below
  } catch (const std::exception&) {
    failed = std::current_exception();  // the session failed
  }
  Lock lock(sessions_.mutex);
  end_turn(lock);
  if (guarded) return true;          // it stays in the group until it hands its step in
  if (!rolled_back) break_up(lock);  // its writes cannot be taken out alone: nothing of the group commits
  leave_and_commit(lock, run_id, nullptr);
  if (failed) std::rethrow_exception(failed);
  return false;  // not guarded: the body ran ROLLBACK, or ended the transaction otherwise
}

GroupOutcome TransactionGroup::hand_in(const StepCommit& step, const std::string& owner, Duration lease_margin) {
  Part part{&step, std::nullopt};
  Lock lock(sessions_.mutex);
  owner_ = owner;
  lease_margin_ = lease_margin;
  leave_and_commit(lock, step.task->run_id, &part);
  // A body after it may run long: its lease is kept meanwhile, as a running body's is.
  const ClaimedTask& task = *step.task;
  const auto renew_every = std::max<Duration>(lease_margin / 2, Duration{100});
  while (!changed_.wait_for(lock, renew_every, [&] { return part.outcome.has_value(); })) {
    lock.unlock();
    try {
      store_.heartbeat(task, task.options.timeout + lease_margin, "");  // lost: the commit fences it
    } catch (const std::exception& e) {
      detail::logger().debug("could not renew the lease of task {} waiting for its commit: {}", task.task_id, e.what());
    }
    lock.lock();
  }
  return std::move(*part.outcome);
}

void TransactionGroup::withdraw(const std::string& run_id) noexcept {
  Lock lock(sessions_.mutex);
  doomed_ = true;  // its writes are in the transaction, and bodies after it may be too
  leave_and_commit(lock, run_id, nullptr);
}

void TransactionGroup::end_turn(Lock&) {
  turn_taken_ = false;
  changed_.notify_all();
}

void TransactionGroup::leave_and_commit(Lock& lock, const std::string& run_id, Part* part) {
  --pending_;
  if (part && ended_) {
    part->outcome = outcome_of(GroupOutcome::Kind::handed_back);  // broken up since it was sealed
  } else if (part) {
    parts_.push_back(part);
  } else {
    runs_.erase(run_id);  // its writes are gone: another step of its run may join
  }
  changed_.notify_all();
  if (pending_ > 0 || ended_) return;
  ended_ = true;  // no one joins it now, and no one else uses its session: this member commits it
  if (sessions_.open_group.get() == this) sessions_.open_group = nullptr;
  lock.unlock();
  commit_all();
  lock.lock();
}

void TransactionGroup::break_up(Lock&) {
  for (Part* p : parts_) p->outcome = outcome_of(GroupOutcome::Kind::handed_back);
  parts_.clear();
  ended_ = true;
  if (sessions_.open_group.get() == this) sessions_.open_group = nullptr;
  work_.reset();
  conn_.reset();
  changed_.notify_all();
}

bool TransactionGroup::abort() noexcept {
  try {
    work_->abort();
    return true;
  } catch (...) {
    return false;  // the session is dropped: the server rolls back what a closed session left open
  }
}

void TransactionGroup::end_with(const std::vector<GroupOutcome>& outcomes, bool session_clean) {
  if (!session_clean) {
    work_.reset();
    conn_.reset();
  } else if (conn_) {
    work_.reset();
    sessions_.give_back(std::move(conn_));
  }
  Lock lock(sessions_.mutex);
  for (std::size_t i = 0; i < parts_.size(); ++i) parts_[i]->outcome = outcomes[i];
  changed_.notify_all();
}

// By the member whose leaving emptied the group: no one else uses its session now. Every part
// gets its outcome, whatever throws.
void TransactionGroup::commit_all() noexcept {
  std::vector<GroupOutcome> outcomes;
  Json key_waited = Json::array();
  bool clean = false;
  try {
    clean = commit_parts(outcomes, key_waited);
  } catch (const std::exception& e) {
    GroupOutcome failed = outcome_of(GroupOutcome::Kind::failed);
    failed.error = detail::error_info(e);
    outcomes.assign(parts_.size(), failed);
  }
  end_with(outcomes, clean);
  if (key_waited.empty()) return;
  try {
    store_.wake_key_waiters_of(key_waited);
  } catch (const std::exception& e) {  // they wake at their poll
    detail::logger().warn("could not wake the tasks waiting for keys of committed steps: {}", e.what());
  }
}

bool TransactionGroup::commit_parts(std::vector<GroupOutcome>& outcomes, Json& key_waited) {
  auto all = [&](const GroupOutcome& o) { outcomes.assign(parts_.size(), o); };
  if (!work_ || parts_.empty() || doomed_) {
    // Broken up; or every body rolled back; or one withdrew after it was sealed, which cannot be
    // taken out alone.
    all(outcome_of(GroupOutcome::Kind::handed_back));
    return work_ && abort();
  }
  // In the order of their workflows, as group commit's batches: the two lock workflow rows alike.
  std::sort(parts_.begin(), parts_.end(),
            [](const Part* a, const Part* b) { return a->step->task->run_id < b->step->task->run_id; });
  std::vector<const StepCommit*> steps;
  for (const Part* p : parts_) steps.push_back(p->step);
  std::vector<StepOutcome> done;
  try {
    const UnpreparedScope unprepared(*conn_, sessions_.unprepared.get());
    if (exec1(*work_, ours(stmt::close_guard).c_str())[0].as<std::int64_t>() != 1) {
      throw std::logic_error("the guard of a transaction shared by transactional bodies is gone");
    }
    done =
        store_.complete_steps_in(*work_, ours(stmt::complete_steps).c_str(), steps, owner_, lease_margin_, key_waited);
  } catch (const std::exception& e) {
    // Nothing committed. A lost session or a deadlock with another commit is no body's fault.
    const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e);
    const bool transient = dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
                           (sql && (sql->sqlstate() == "40P01" || sql->sqlstate() == "40001"));
    GroupOutcome failed = outcome_of(transient ? GroupOutcome::Kind::handed_back : GroupOutcome::Kind::failed);
    failed.error = detail::error_info(e);
    all(failed);
    return false;
  }
  outcomes.assign(steps.size(), outcome_of(GroupOutcome::Kind::committed));
  bool all_finished = true;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    outcomes[i].step = std::move(done[i]);
    all_finished = all_finished && outcomes[i].step.finish == FinishOutcome::committed;
  }
  if (!all_finished) {
    // A lease ran out after its step was handed in: its writes cannot be taken out alone, so
    // nothing commits. The others are handed back; the late one's outcome is fenced off.
    for (auto& o : outcomes) {
      if (o.step.finish == FinishOutcome::committed) o = outcome_of(GroupOutcome::Kind::handed_back);
    }
    key_waited = Json::array();
    return abort();
  }
  try {
    if (detail::failpoint("transaction.connection_lost")) {
      // The session is cut off before its COMMIT arrives, as by a network failure: the commit
      // below is in doubt, and the outcome is read back on another connection. The server's
      // pid, not libpq's backendpid(): behind a pooler that is the pooler's own number.
      const auto pid = exec1(*work_, "SELECT pg_backend_pid()")[0].as<int>();
      auto killer = sessions_.pool.open();
      pqxx::nontransaction(*killer).exec_params("SELECT pg_terminate_backend($1, 5000)", pid);
    }
    work_->commit();
    if (detail::failpoint("lost_answer.activity_transaction")) {
      throw pqxx::in_doubt_error("failpoint lost_answer.activity_transaction: the answer of a commit is lost");
    }
  } catch (const std::exception& e) {
    key_waited = Json::array();
    if (dynamic_cast<const pqxx::in_doubt_error*>(&e) || dynamic_cast<const pqxx::broken_connection*>(&e)) {
      GroupOutcome doubt = outcome_of(GroupOutcome::Kind::in_doubt);
      doubt.why = e.what();
      all(doubt);
      return false;
    }
    // Refused at COMMIT (a deferred constraint, a serialization failure): rolled back. Which body
    // it was is not known: each attempt fails, as one of its own would.
    GroupOutcome failed = outcome_of(GroupOutcome::Kind::failed);
    failed.error = detail::error_info(e);
    all(failed);
    return true;
  }
  return true;
}

}  // namespace durable::pg
