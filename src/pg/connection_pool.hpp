// A small pool of libpqxx connections, each with every statement prepared once, and the
// one place that decides which database errors are retried on a fresh connection.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pg/session_policy.hpp"
#include "pg/statements.hpp"

namespace durable {
class DatabaseRefused;
}

namespace durable::pg {

// Throws InvalidOptions naming `field` when libpq cannot parse `url` as a URI or conninfo string:
// no connection could ever be made, so nothing retries it. The message leaves out the URL and the
// parts of it libpq quotes, which may hold a password.
void check_conninfo(const std::string& url, const char* field);

// `url` as a conninfo string that names its sessions `application_name` unless the URL or
// $PGAPPNAME does (libpq's fallback_application_name): set at connect, it is no session state a
// pooler would have to carry.
std::string with_application_name(const std::string& url, const std::string& application_name);

// Whether `conn` goes through a connection pooler rather than to PostgreSQL itself: a pooler
// announces a backend pid of its own to its clients.
bool behind_pooler(pqxx::connection& conn);

// Whether `conn`'s server takes no writes now: a standby (in recovery), or every transaction
// read-only by default (default_transaction_read_only). Empty when the session cannot say.
std::optional<bool> takes_no_writes(pqxx::connection& conn);

// Thrown inside the pool when a session reaches a server that takes no writes: retried on a new
// session, as a lost connection is, until unavailable_after.
class NoWritableServer : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a statement error PostgreSQL answered becomes: DatabaseRefused, with its SQLSTATE.
DatabaseRefused refused(const pqxx::sql_error& e);

class ConnectionPool {
 public:
  // `application_name` names the sessions in pg_stat_activity (unless the URL names them).
  ConnectionPool(std::string url, std::string schema, int size, std::string application_name,
                 SessionPolicy policy = {});
  ~ConnectionPool();

  // Opens a connection with the schema's statements prepared on it; the pool's first one migrates
  // the schema first (the one place it is ensured: statements cannot be prepared without it).
  std::unique_ptr<pqxx::connection> connect();
  // Migrates the schema unless this pool did already; throws what migrating threw. Unless every
  // session is read-only, waits (unavailable_after) for a server that takes writes.
  void ensure_schema();
  std::chrono::milliseconds unavailable_after() const { return policy_.unavailable_after; }
  // Opens a plain connection, named like the pool's.
  std::unique_ptr<pqxx::connection> open() const;
  // Opens the connection to LISTEN on: a plain one, or behind a pooler one to the listen URL;
  // nullptr behind a pooler without one (nothing listens then: the engine polls).
  std::unique_ptr<pqxx::connection> open_listener() const;

  // Runs `work`, which only reads, on a pooled connection. A broken connection, a serialization
  // failure or a deadlock is retried on a fresh connection until the policy's unavailable_after. Giving up
  // throws durable::DatabaseUnavailable; any other statement error is durable::DatabaseRefused
  // at once. Whatever writes goes through write().
  void read(const std::function<void(pqxx::connection&)>& work);

  // The one policy for a write whose outcome is unknown. Retried like read, but `work` is told whether an
  // earlier try may have committed (the connection broke or the commit was in doubt after the
  // statement was sent): a fenced write that then matches nothing must re-read what it wrote and
  // decide (committed earlier, or fenced off), never assume nothing happened. `name` names the
  // write for the failpoint `lost_answer.<name>`, which drops the answer of a try that committed.
  using Write = std::function<void(pqxx::connection&, bool maybe_committed)>;
  void write(std::string_view name, const Write& work);

  const std::string& url() const { return url_; }
  const std::string& schema() const { return schema_; }
  // Behind a pooler (SessionPolicy::pooler): every statement's text, run unprepared. Else nullptr.
  const std::shared_ptr<const StatementTexts>& unprepared_texts() const { return unprepared_; }

 private:
  // Why a try failed and how the next goes: on a new session (keep false), knowing the last may
  // have committed.
  struct Retry {
    std::string reason;
    std::string state;  // the SQLSTATE, when the server gave one
    bool keep = true;   // false when the connection itself is no longer trustworthy
    bool maybe_committed = false;
    bool no_writes = false;  // no server took writes
  };
  void run_tries(const Write& work, std::string_view name);
  // Inside a catch block: the Retry the exception in flight calls for, or it (or what it means,
  // DatabaseRefused) thrown on. `conn`: the try's session, if it had one.
  Retry retry_for_current(pqxx::connection* conn) const;
  std::unique_ptr<pqxx::connection> acquire();
  void release(std::unique_ptr<pqxx::connection> conn);
  std::unique_ptr<pqxx::connection> open_session() const;
  // Throws InvalidOptions when the URLs and the policy disagree on a pooler.
  void check_pooler(pqxx::connection& conn) const;
  // Throws NoWritableServer when `conn`'s server takes no writes (or cannot say). A pool that does
  // not migrate keeps such a session: its first write is refused (25006), and retried on a new one.
  void check_writable(pqxx::connection& conn) const;

  std::string url_;
  std::string conninfo_;  // url_ with the application name as libpq's fallback_application_name
  std::string schema_;
  std::string application_name_;
  int size_;
  SessionPolicy policy_;
  std::shared_ptr<const StatementTexts> unprepared_;
  std::once_flag pooler_checked_;
  int open_ = 0;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::once_flag migrated_;  // not set by a migration that threw: the next connection tries again
  // Whether a session was ever opened: until then a refusal no retry mends fails at once (a bad
  // URL or certificate at the start); after, every failure to connect is retried (a restart, a
  // failover, a host of a multi-host URL that refuses while another comes back).
  std::atomic<bool> connected_once_{false};
  std::atomic<bool> warned_no_writes_{false};
};

// Quoted identifier for a schema name already checked by validate_schema_name().
std::string quoted(const std::string& identifier);

// The schema's database clock now (db_now(): time skipping included), in us since the epoch.
std::int64_t db_now_us(ConnectionPool& pool);

}  // namespace durable::pg
