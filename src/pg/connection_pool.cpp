#include "pg/connection_pool.hpp"

#include <fmt/format.h>
#include "base/log.hpp"

#include <libpq-fe.h>

#include <mutex>
#include <regex>
#include <thread>

#include "base/failpoint.hpp"
#include "base/printable.hpp"
#include "durable/errors.hpp"
#include "pg/connect_errors.hpp"
#include "pg/migrations.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

std::string quoted(const std::string& identifier) { return "\"" + identifier + "\""; }

void check_conninfo(const std::string& url, const char* field) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (options) {
    PQconninfoFree(options);
    return;
  }
  std::string reason = error ? error : "out of memory";
  PQfreemem(error);
  reason = std::regex_replace(reason, std::regex(R"("[^"]*")"), "\"...\"");  // libpq quotes parts of the URL
  while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' ')) reason.pop_back();
  throw InvalidOptions(
      fmt::format("{}: the database URL does not parse ({}): give a libpq URI such as "
                  "postgresql://user@localhost:5432/app (percent-encode special characters) or a conninfo string "
                  "such as \"host=localhost dbname=app\"",
                  field, detail::printable(reason)));
}

std::string with_application_name(const std::string& url, const std::string& application_name) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  PQfreemem(error);
  if (options == nullptr) return url;  // check_conninfo has said why already
  auto quote = [](const std::string& value) {
    std::string out = "'";
    for (const char c : value) {
      if (c == '\\' || c == '\'') out += '\\';
      out += c;
    }
    return out + "'";
  };
  std::string conninfo;
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val != nullptr && std::string_view(o->keyword) != "fallback_application_name") {
      conninfo += fmt::format("{}={} ", o->keyword, quote(o->val));
    }
  }
  PQconninfoFree(options);
  return conninfo + "fallback_application_name=" + quote(application_name.substr(0, 63));
}

bool behind_pooler(pqxx::connection& conn) {
  return pqxx::nontransaction(conn).exec1("SELECT pg_backend_pid()")[0].as<int>() != conn.backendpid();
}

std::optional<bool> takes_no_writes(pqxx::connection& conn) {
  if (!conn.is_open()) return std::nullopt;  // libpqxx would reconnect it, perhaps to another host
  try {
    return pqxx::nontransaction(conn)
        .exec1("SELECT pg_is_in_recovery() OR current_setting('default_transaction_read_only')::bool")[0]
        .as<bool>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

const char* const no_writable_server_hint =
    "if this lasts, point EngineOptions::database_url at the primary, or list the primary and its standbys with "
    "target_session_attrs=read-write (\"host=db1,db2 target_session_attrs=read-write\": libpq connects to "
    "whichever takes writes); see docs/operations.md, Failover";

DatabaseRefused refused(const pqxx::sql_error& e) {
  std::string state = e.sqlstate();
  // libpqxx 6.4 throws insufficient_privilege without its SQLSTATE.
  if (state.empty() && dynamic_cast<const pqxx::insufficient_privilege*>(&e) != nullptr) state = "42501";
  // 42501, insufficient_privilege, on a table, sequence or schema: a role the schema's owner has
  // not granted what this needs.
  static const std::regex on_schema_object("permission denied for (table|sequence|schema) ");
  const char* hint = state == "42501" && std::regex_search(e.what(), on_schema_object)
                         ? " (this role lacks a privilege on the schema: its owner grants an engine's with "
                           "`durable migrate --engine-role ROLE`, a reader's with `--reader-role ROLE`; see "
                           "docs/operations.md, Roles and privileges)"
                         : "";
  std::string what = e.what();
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
  return DatabaseRefused(fmt::format("database error ({}): {}{}", state, what, hint), state);
}

std::int64_t db_now_us(ConnectionPool& pool) {
  std::int64_t now = 0;
  pool.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    now = exec1(tx, stmt::db_now_us)["now_us"].as<std::int64_t>();
  });
  return now;
}

ConnectionPool::ConnectionPool(std::string url, std::string schema, int size, std::string application_name,
                               SessionPolicy policy)
    : url_(std::move(url)),
      schema_(std::move(schema)),
      application_name_(std::move(application_name)),
      size_(size),
      policy_(std::move(policy)) {
  check_conninfo(url_, "EngineOptions::database_url");
  if (!policy_.listen_url.empty()) check_conninfo(policy_.listen_url, "EngineOptions::listen_url");
  conninfo_ = with_application_name(url_, application_name_);
  if (policy_.pooler) unprepared_ = statement_text_map(schema_);
}

ConnectionPool::~ConnectionPool() = default;

std::unique_ptr<pqxx::connection> ConnectionPool::open_session() const {
  return std::make_unique<pqxx::connection>(conninfo_);
}

std::unique_ptr<pqxx::connection> ConnectionPool::open() const {
  // libpqxx fills a table of encodings at its first query, as a function-local static. That is
  // thread-safe, but libpqxx is not built for ThreadSanitizer, which then reports two engines
  // opening their first connections at once as a race. The process's first connection is opened
  // alone, behind a once-flag ThreadSanitizer understands; every later one is ordered after it.
  static std::once_flag first_connection;
  std::unique_ptr<pqxx::connection> conn;
  std::call_once(first_connection, [&] {
    conn = open_session();
    pqxx::nontransaction(*conn).exec("SELECT 1");
  });
  return conn ? std::move(conn) : open_session();
}

std::unique_ptr<pqxx::connection> ConnectionPool::open_listener() const {
  if (!policy_.pooler) return open();
  if (policy_.listen_url.empty()) return nullptr;
  return std::make_unique<pqxx::connection>(with_application_name(policy_.listen_url, application_name_));
}

void ConnectionPool::check_pooler(pqxx::connection& conn) const {
  if (!policy_.pooler) {
    if (!behind_pooler(conn)) return;
    throw InvalidOptions(
        "EngineOptions::database_url reaches PostgreSQL through a connection pooler (the server's backend pid is "
        "not the one the connection announced): set EngineOptions::pooler_mode = true (the durable tool: "
        "--pooler-mode), which keeps no session state (needed with PgBouncer's pool_mode = transaction), or connect to "
        "PostgreSQL directly; see "
        "docs/operations.md, Behind PgBouncer");
  }
  // Our statements' custom plans (each planned at every execution here) cost enough to cross
  // jit_above_cost on tables without statistics yet: JIT-compiled, one takes 30 ms to a second.
  // The engine cannot turn it off for a session it does not keep; the role's defaults can.
  if (pqxx::nontransaction(conn).exec1("SELECT current_setting('jit') = 'on'")[0].as<bool>()) {
    detail::logger().warn(
        "behind a pooler (EngineOptions::pooler_mode), JIT compilation is on for this role: a statement may take "
        "30 ms to a second to compile; turn it off with `ALTER ROLE <engine role> SET jit = off` (or PgBouncer's "
        "connect_query = 'SET jit = off'); see docs/operations.md, Behind PgBouncer");
  }
  if (policy_.listen_url.empty()) return;
  bool listen_pooled = false;
  try {
    listen_pooled = behind_pooler(*open_listener());
  } catch (const pqxx::broken_connection& e) {  // not this pool's URL: its retries and refusals do not apply
    detail::logger().warn(
        "EngineOptions::listen_url: cannot connect ({}); the engine polls until its LISTEN session does",
        detail::printable(e.what()));
    return;
  }
  if (!listen_pooled) return;
  throw InvalidOptions(
      "EngineOptions::listen_url reaches PostgreSQL through a connection pooler too: LISTEN needs a session of its "
      "own, so give a URL straight to PostgreSQL (the pooler's server), or none (the engine then polls every "
      "poll_interval); see docs/operations.md, Behind PgBouncer");
}

void ConnectionPool::check_writable(pqxx::connection& conn) const {
  if (policy_.read_only) return;
  const std::optional<bool> no_writes = takes_no_writes(conn);
  if (no_writes == false) return;
  throw NoWritableServer(
      no_writes ? fmt::format("the server takes no writes (a standby, or read-only): {}", no_writable_server_hint)
                : std::string("the session broke while it was checked"));
}

void ConnectionPool::ensure_schema() {
  // A connection of this pool exists only on a migrated schema. A started engine writes: on a
  // server that takes none its start waits for one, as for a server that is down.
  read([this](pqxx::connection& conn) { check_writable(conn); });
}

std::unique_ptr<pqxx::connection> ConnectionPool::connect() {
  auto conn = open();
  // A pooler that is not told of would keep the session state below (and the statements prepared)
  // on a server connection other clients get next; in transaction mode ours would be gone.
  std::call_once(pooler_checked_, [&] { check_pooler(*conn); });
  // Before migrating, which writes; the pools that do not migrate find out at their first write.
  if (policy_.migrate) check_writable(*conn);
  if (policy_.read_only || !policy_.migrate) {
    check_schema_version(*conn, schema_);
  } else {
    std::call_once(migrated_, [&] { migrate(*conn, schema_); });
  }
  connected_once_ = true;
  if (policy_.pooler) return conn;  // no session state: statements run from their texts (exec())
  if (policy_.read_only) pqxx::nontransaction(*conn).exec0("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY");
  // Our statements are long CTEs whose custom plans cost a few milliseconds to make at every
  // execution (more than running them); their generic plans are as good, so plan them once.
  // Every statement finds its rows by key. Planned once while the tables are still small, a
  // generic plan would scan a whole table (runs, workflows) at every step until the next
  // ANALYZE: with sequential scans off, the planner takes the index whatever the sizes; with hash
  // and merge joins off, a join looks each row up by key (a hash join read every running task to
  // finish a few). JIT compiling never pays off on key lookups.
  pqxx::nontransaction(*conn).exec0(
      "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off; SET enable_hashjoin = off; "
      "SET enable_mergejoin = off; SET jit = off");
  prepare_statements(*conn, schema_);
  return conn;
}

std::unique_ptr<pqxx::connection> ConnectionPool::acquire() {
  std::unique_lock lock(mutex_);
  available_.wait(lock, [&] { return !idle_.empty() || open_ < size_; });
  if (!idle_.empty()) {
    auto conn = std::move(idle_.back());
    idle_.pop_back();
    return conn;
  }
  ++open_;  // reserve the slot before connecting outside the lock
  lock.unlock();
  try {
    return connect();
  } catch (...) {
    std::lock_guard relock(mutex_);
    --open_;
    available_.notify_one();
    throw;
  }
}

void ConnectionPool::release(std::unique_ptr<pqxx::connection> conn) {
  std::lock_guard lock(mutex_);
  if (conn) {
    idle_.push_back(std::move(conn));
  } else {
    --open_;  // a broken connection is dropped; the next acquire opens a new one
  }
  available_.notify_one();
}

void ConnectionPool::read(const std::function<void(pqxx::connection&)>& work) {
  run_tries([&](pqxx::connection& conn, bool) { work(conn); }, {});
}

void ConnectionPool::write(std::string_view name, const Write& work) { run_tries(work, name); }

ConnectionPool::Retry ConnectionPool::retry_for_current(pqxx::connection* conn) const {
  Retry r;
  try {
    throw;
  } catch (const NoWritableServer& e) {
    r.reason = e.what();
    r.no_writes = true;
    r.keep = false;
  } catch (const pqxx::broken_connection& e) {
    if (!conn && !connected_once_) {  // never a session: a refusal no retry mends fails now, saying what to change
      if (auto refusal = refused_for_good(e.what())) throw *refusal;
    }
    r.reason = fmt::format("{}: {}", conn ? "connection lost" : "cannot connect", e.what());
    // Each host of a multi-host URL a standby: a failover under way, or a URL to fix.
    r.no_writes = std::string_view(e.what()).find("session is read-only") != std::string_view::npos;
    if (r.no_writes) r.reason += fmt::format(" ({})", no_writable_server_hint);
    r.keep = false;
    r.maybe_committed = conn != nullptr;  // not when it could not even connect
  } catch (const pqxx::in_doubt_error& e) {
    r.reason = fmt::format("commit outcome unknown, re-checking: {}", e.what());
    r.keep = false;
    r.maybe_committed = true;
  } catch (const pqxx::serialization_failure& e) {
    r.reason = fmt::format("serialization failure: {}", e.what());
  } catch (const pqxx::deadlock_detected& e) {
    r.reason = fmt::format("deadlock: {}", e.what());
  } catch (const pqxx::sql_error& e) {
    // Class 57P (admin shutdown, cannot connect now) and 08 (connection exception) mean
    // the server is restarting or unreachable: worth another try on a new connection.
    // 57014 is a statement cancelled (statement_timeout, pg_cancel_backend) and 25P03 a session
    // ended by idle_in_transaction_session_timeout: both transient, the work itself was fine.
    r.state = e.sqlstate();
    if (r.state.rfind("57P", 0) == 0 || r.state.rfind("08", 0) == 0) {
      r.reason = fmt::format("server unavailable ({}): {}", r.state, e.what());
      r.keep = false;
      r.maybe_committed = true;  // a server shutting down may have committed before it said so
    } else if (r.state == "57014" || r.state == "25P03") {
      r.reason = fmt::format("statement cancelled or session timed out ({}): {}", r.state, e.what());
      r.keep = r.state == "57014";
    } else if (conn && !policy_.read_only && takes_no_writes(*conn) != false) {
      // A server that takes no writes: a failed-over primary, which answers reads and refuses
      // each write (25006 read-only transaction, or "recovery is in progress"), or one set
      // read-only (default_transaction_read_only, as some hosts do when the disk is full); or
      // a session that broke meanwhile. Not the work's fault: a new session, on the host the
      // URL leads to now. (A 25006 on a server that takes writes is a bug: refused below.)
      r.reason = fmt::format("the server takes no writes ({}), reconnecting: {} ({})", r.state, e.what(),
                             no_writable_server_hint);
      r.no_writes = true;
      r.keep = false;
    } else {
      throw refused(e);
    }
  }
  return r;
}

void ConnectionPool::run_tries(const Write& work, std::string_view name) {
  const auto deadline = std::chrono::steady_clock::now() + policy_.unavailable_after;
  auto pause = std::chrono::milliseconds{20};
  bool maybe_committed = false;  // an earlier try's statement may have committed
  const std::string lost_answer = name.empty() ? std::string() : fmt::format("lost_answer.{}", name);
  for (int attempt = 1;; ++attempt) {
    std::unique_ptr<pqxx::connection> conn;
    Retry retry;
    auto give_back = [&] {  // a connection no longer trustworthy is dropped
      if (conn) release(retry.keep && conn->is_open() ? std::move(conn) : nullptr);
    };
    try {
      conn = acquire();
      const UnpreparedScope unprepared(*conn, unprepared_.get());
      work(*conn, maybe_committed);
      if (!lost_answer.empty() && detail::failpoint(lost_answer)) {
        throw pqxx::broken_connection("failpoint " + lost_answer + ": the answer of a committed write is lost");
      }
      give_back();
      return;
    } catch (...) {
      try {
        retry = retry_for_current(conn.get());
      } catch (...) {
        give_back();
        throw;
      }
    }
    give_back();
    maybe_committed = maybe_committed || retry.maybe_committed;
    if (std::chrono::steady_clock::now() + pause > deadline) {
      throw DatabaseUnavailable(fmt::format("giving up after {} attempts: {}", attempt, retry.reason), retry.state);
    }
    if (retry.no_writes && !warned_no_writes_.exchange(true)) {  // an outage worth a line, once per pool
      detail::logger().warn("no writable database server; retrying on new sessions for up to {} ms: {}",
                            policy_.unavailable_after.count(), retry.reason);
    }
    detail::logger().debug("retrying database work (attempt {}): {}", attempt, retry.reason);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds{1000});
  }
}

}  // namespace durable::pg
