#include "pg/activity_transaction.hpp"

#include <fmt/format.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

#include "base/failpoint.hpp"
#include "base/log.hpp"
#include "durable/errors.hpp"
#include "durable/pqxx.hpp"
#include "pg/connection_pool.hpp"
#include "pg/statements.hpp"
#include "pg/store.hpp"

namespace durable::pg {

namespace {

// Our statements on a body's session carry a prefix: its own prepared statements keep their names.
const std::string prefix = "durable_";
const std::vector<std::string> our_statements = {stmt::open_guard, stmt::close_guard, stmt::complete_steps};

// SQLSTATE of refuse_unguarded_commit (migration 17): the body committed its transaction.
constexpr const char* unguarded_commit_state = "DUR02";

TransactionMisuse misuse(const std::string& activity) {
  return TransactionMisuse(
      fmt::format("activity '{}' ended its transaction itself (commit(), abort(), or COMMIT / ROLLBACK in SQL): a "
                  "transactional activity returns, and durable commits its writes together with its result; nothing of "
                  "this attempt was committed",
                  activity));
}

std::shared_ptr<const StatementTexts> prefixed(const std::shared_ptr<const StatementTexts>& texts) {
  if (!texts) return nullptr;
  auto ours = std::make_shared<StatementTexts>();
  for (const auto& name : our_statements) ours->emplace(prefix + name, texts->at(name));
  return ours;
}

// Statement `name` of ours, as the body's session knows it.
std::string ours(const char* name) { return prefix + name; }

}  // namespace

struct TransactionConnections::Sessions {
  explicit Sessions(ConnectionPool& p) : pool(p), unprepared(prefixed(p.unprepared_texts())) {}
  ConnectionPool& pool;
  // Behind a transaction pooler: our statements' texts under their prefixed names, run unprepared.
  std::shared_ptr<const StatementTexts> unprepared;
  std::mutex mutex;
  std::vector<std::unique_ptr<pqxx::connection>> idle;

  std::unique_ptr<pqxx::connection> take() {
    {
      std::lock_guard lock(mutex);
      if (!idle.empty()) {
        auto conn = std::move(idle.back());
        idle.pop_back();
        return conn;
      }
    }
    auto conn = pool.open();
    if (!unprepared) prepare_statements(*conn, pool.schema(), our_statements, prefix);
    return conn;
  }
  void give_back(std::unique_ptr<pqxx::connection> conn) {
    std::lock_guard lock(mutex);
    idle.push_back(std::move(conn));
  }
};

TransactionConnections::TransactionConnections(ConnectionPool& pool) : sessions_(std::make_unique<Sessions>(pool)) {}
TransactionConnections::~TransactionConnections() = default;

struct ActivityTransaction::Open {
  explicit Open(TransactionConnections::Sessions& s) : sessions(s), conn(s.take()) {}
  Open(const Open&) = delete;
  Open& operator=(const Open&) = delete;
  TransactionConnections::Sessions& sessions;
  std::unique_ptr<pqxx::connection> conn;
  std::optional<pqxx::work> work;
  bool reusable = false;  // the session ended the transaction cleanly: the next body may have it

  ~Open() {
    work.reset();  // rolls back what is still open
    if (reusable && conn && conn->is_open()) sessions.give_back(std::move(conn));
  }
};

ActivityTransaction::ActivityTransaction(TransactionConnections& connections, Store& store, std::string activity_name)
    : store_(store), activity_name_(std::move(activity_name)) {
  // As the pool's own work: a session lost (an idle one may have died with a restart of the
  // server) or on a server that takes no writes (a failover) is replaced until unavailable_after.
  // Nothing ran yet: giving up hands the task back, it fails no attempt.
  ConnectionPool& pool = connections.sessions_->pool;
  const auto deadline = std::chrono::steady_clock::now() + pool.unavailable_after();
  auto pause = std::chrono::milliseconds{20};
  for (int attempt = 1;; ++attempt) {
    std::string why;
    try {
      auto open = std::make_unique<Open>(*connections.sessions_);
      try {
        open->work.emplace(*open->conn);
        const UnpreparedScope unprepared(*open->conn, open->sessions.unprepared.get());
        exec0(*open->work, ours(stmt::open_guard).c_str());
        open_ = std::move(open);
        return;
      } catch (const pqxx::sql_error& e) {
        open->work.reset();
        if (takes_no_writes(*open->conn) == false) throw;  // the statement's own fault
        why = fmt::format("the server takes no writes: {}", e.what());
      }
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

ActivityTransaction::~ActivityTransaction() = default;

Json ActivityTransaction::run_body(const detail::ActivityDefinition& def, const ActivityContext& attempt,
                                   const Json& input) {
  TransactionContext ctx(attempt, *open_->work);
  try {
    return def.run_in_transaction(ctx, input);
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == unguarded_commit_state) throw misuse(activity_name_);
    throw;
  }
}

void ActivityTransaction::roll_back() noexcept {
  if (!open_ || !open_->work) return;
  try {
    open_->work->abort();
    open_->reusable = true;
  } catch (...) {
    // The session is dropped with it: the server rolls back what a closed session left open.
  }
  open_->work.reset();
}

StepOutcome ActivityTransaction::commit(const StepCommit& step, const std::string& owner, Duration lease_margin) {
  pqxx::work& tx = *open_->work;
  Json key_waited = Json::array();
  StepOutcome outcome;
  // Up to the COMMIT, whatever fails leaves nothing committed: the server ends an open transaction
  // without one as a rollback.
  try {
    const UnpreparedScope unprepared(*open_->conn, open_->sessions.unprepared.get());
    // No guard to take away: the body ended its transaction (a pqxx::usage_error says so too).
    if (exec1(tx, ours(stmt::close_guard).c_str())[0].as<std::int64_t>() != 1) throw misuse(activity_name_);
    outcome = store_.complete_step_in(tx, ours(stmt::complete_steps).c_str(), step, owner, lease_margin, key_waited);
  } catch (const TransactionMisuse& e) {
    roll_back();
    throw NotCommitted(detail::error_info(e));
  } catch (const pqxx::usage_error&) {
    roll_back();
    throw NotCommitted(detail::error_info(misuse(activity_name_)));
  } catch (const std::exception& e) {
    roll_back();
    throw NotCommitted(detail::error_info(e));
  }
  if (outcome.finish != FinishOutcome::committed) {  // its lease was lost: the body's writes go with it
    roll_back();
    return outcome;
  }
  if (detail::failpoint("transaction.connection_lost")) {
    // The session is cut off before its COMMIT arrives, as by a network failure: the commit below
    // is in doubt, and the outcome is read back on another connection.
    // The server's pid, not libpq's backendpid(): behind a pooler that is the pooler's own number.
    const auto pid = tx.exec1("SELECT pg_backend_pid()")[0].as<int>();
    auto killer = open_->sessions.pool.open();
    pqxx::nontransaction(*killer).exec_params("SELECT pg_terminate_backend($1, 5000)", pid);
  }
  try {
    tx.commit();
    if (detail::failpoint("lost_answer.activity_transaction")) {
      throw pqxx::in_doubt_error("failpoint lost_answer.activity_transaction: the answer of a commit is lost");
    }
  } catch (const pqxx::in_doubt_error& e) {
    return read_back(step, e.what());
  } catch (const pqxx::broken_connection& e) {
    return read_back(step, e.what());
  } catch (const std::exception& e) {
    throw NotCommitted(detail::error_info(e));  // refused at COMMIT (a serialization failure): rolled back
  }
  open_->reusable = true;
  if (!key_waited.empty()) store_.wake_key_waiters_of(key_waited);
  return outcome;
}

StepOutcome ActivityTransaction::read_back(const StepCommit& step, const std::string& why) {
  detail::logger().info("the commit of activity '{}' (task {}) is in doubt ({}); reading it back", activity_name_,
                        step.task->task_id, why);
  open_->work.reset();
  open_->conn.reset();
  if (auto committed = store_.committed_step(step)) return *committed;
  throw NotCommitted({"durable::DatabaseUnavailable",
                      fmt::format("the connection was lost as the step committed, and it had not: {}", why)});
}

}  // namespace durable::pg
