// Test kit: a throwaway PostgreSQL cluster, per-test schemas, a time-skipping clock, and replay
// checks of recorded histories against the current workflow code (a deploy gate).
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "durable/detail/payload.hpp"
#include "durable/ids.hpp"
#include "durable/options.hpp"
#include "durable/run_records.hpp"
#include "durable/versioning.hpp"

namespace durable {
class Engine;
}

namespace durable::testing {

// A private PostgreSQL cluster in a temporary folder, reachable only on a unix socket there.
// initdb runs at construction and the server is stopped and the folder removed on destruction.
// When the process runs as root, the cluster is owned by and runs as an unprivileged user
// (Postgres refuses root); the connecting role is always `durable`, trusted on the socket.
class TemporaryPostgres {
 public:
  struct Options {
    std::filesystem::path bin_dir{};     // default: $DURABLE_PG_BIN, else newest /usr/lib/postgresql/*/bin
    std::string run_as_user = "nobody";  // used only when running as root
    int max_connections = 300;           // many engines, each with a pool, share one cluster
    // Also listen on 127.0.0.1 (a free port), over TLS only, with a certificate for "localhost"
    // signed by a CA made for the cluster (make_test_certificates): see tls_url().
    bool tls = false;
    // A streaming standby of this server instead of a new cluster: a copy of it (pg_basebackup)
    // that replays its WAL over its socket, read-only until promote(). Outlives no primary.
    const TemporaryPostgres* standby_of = nullptr;
    // The server's synchronous_standby_names: "*" makes each commit wait until a standby has
    // flushed it (a commit is then on both); empty: asynchronous replication.
    std::string synchronous_standby_names{};
  };

  TemporaryPostgres();
  explicit TemporaryPostgres(Options options);
  ~TemporaryPostgres();
  TemporaryPostgres(const TemporaryPostgres&) = delete;
  TemporaryPostgres& operator=(const TemporaryPostgres&) = delete;

  // libpq conninfo for the cluster's `postgres` database, e.g. "host=/tmp/durable-pg-XXXX dbname=postgres user=durable".
  const std::string& url() const;
  // With Options::tls: libpq conninfo over TCP to 127.0.0.1 as host "localhost", the server's
  // certificate verified in full against the cluster's CA (sslmode=verify-full, sslrootcert=).
  // The server refuses TCP without TLS. Empty without Options::tls.
  const std::string& tls_url() const;
  // With Options::tls: the cluster's CA certificate (PEM), which signed the server's.
  std::filesystem::path tls_ca_file() const;

  // How stop() shuts the server down: `fast` disconnects clients and checkpoints; `immediate`
  // stops at once, like a crash (recovery replays the WAL at the next start).
  enum class StopMode { fast, immediate };
  // Stop the server and start it again on the same data.
  void stop(StopMode mode = StopMode::fast);
  void start();
  void restart();
  // A standby's: ends its recovery, so it takes writes (pg_ctl promote); returns when it does.
  void promote();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A PgBouncer (Debian's pgbouncer) in front of a PostgreSQL server, on 127.0.0.1 at a free port,
// in transaction mode by default: for tests of EngineOptions::pooler_mode. It trusts the users
// it lists (Options::users) and passes them on to the server; it stops when this object goes, or
// when the thread that made it ends (the process killed with it).
class TemporaryPgBouncer {
 public:
  struct Options {
    std::string run_as_user = "nobody";     // used only when running as root (PgBouncer refuses root)
    std::string pool_mode = "transaction";  // or "session", "statement"
    int server_connections = 20;            // per user and database (PgBouncer's default_pool_size)
    std::vector<std::string> users{};       // who may log in; the server URL's user always may
    // Run on each server connection before any client has it (PgBouncer's connect_query), e.g.
    // "SET jit = off". No single quotes.
    std::string connect_query{};
  };

  // `server_url`: libpq conninfo of the server (host, port, dbname, user), e.g. TemporaryPostgres::url().
  explicit TemporaryPgBouncer(const std::string& server_url);
  TemporaryPgBouncer(const std::string& server_url, Options options);
  ~TemporaryPgBouncer();
  TemporaryPgBouncer(const TemporaryPgBouncer&) = delete;
  TemporaryPgBouncer& operator=(const TemporaryPgBouncer&) = delete;

  // libpq conninfo for the server URL's database and user, through the pooler.
  const std::string& url() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A certificate authority and a server certificate it signed for `host_names` (subjectAltName:
// DNS names, or IP addresses), made in `dir` with the openssl program: for tests of TLS
// (TemporaryPostgres::Options::tls, `durable console --tls-cert`). Valid for 30 days.
struct TestCertificates {
  std::filesystem::path ca_cert;  // PEM: what clients trust (libpq's sslrootcert)
  std::filesystem::path cert;     // PEM: the server's certificate
  std::filesystem::path key;      // PEM: its private key, mode 0600
};
TestCertificates make_test_certificates(const std::filesystem::path& dir, const std::vector<std::string>& host_names);

// DURABLE_DATABASE_URL when set; otherwise a TemporaryPostgres started on first use and
// stopped when the process exits. Tests and examples call this to find their database.
const std::string& database_url();

// A fresh schema name (`t_<random>`) so each test works in its own tables.
std::string unique_schema(const std::string& prefix = "t");

// Drop a schema and everything in it (tests clean up after themselves).
void drop_schema(const std::string& url, const std::string& schema);

// Time skipping: moves the database clock of `schema` forward by `by` for every engine on it
// (due times, timers and leases are all judged by that clock) and wakes them. Tests only.
void advance_clock(const std::string& url, const std::string& schema, Duration by);
// The same, to a given instant (earlier or later than the real time).
void set_clock(const std::string& url, const std::string& schema, std::chrono::system_clock::time_point to);

// Replay checks (docs/versioning.md): does this build's workflow code still replay recorded runs?

// What replaying one history against the current code found.
struct ReplayResult {
  WorkflowId workflow_id;
  RunId run_id;
  std::string workflow_name;
  std::optional<Divergence> divergence;  // none: the code replays the whole journal
  // Set by check_replay when the run's stored history could not be read (why): nothing replayed.
  std::optional<std::string> unreadable{};
  bool ok() const { return !divergence && !unreadable; }
};

// Replays an exported history (Runs::export_history) against the workflows registered on
// `engine` (which need not be started), writing nothing anywhere. A divergence is a call the
// journal does not hold at that sequence number, or, for a run that ended, a call past its end.
// Throws InvalidHistory when `history` is not a history of a format version this build reads,
// UnknownWorkflow when its workflow is not registered on `engine`.
ReplayResult replay(const Json& history, const Engine& engine);
// The same for a history file; InvalidHistory when it is not valid JSON (names the file).
ReplayResult replay_file(const std::filesystem::path& file, const Engine& engine);

struct ReplayCheckOptions {
  RunFilter filter{.statuses = {WorkflowStatus::running}};  // which runs; by default the running ones
  int sample = 100;                                         // at most this many, newest first (1 to 100,000)
};
struct ReplayReport {
  int replayed = 0;                      // histories replayed
  std::vector<ReplayResult> divergent;   // those the code does not replay
  std::vector<ReplayResult> unreadable;  // those whose history could not be read (not replayed)
  bool ok() const { return divergent.empty() && unreadable.empty(); }
};
// Replays the histories of live runs of `schema` (those `options` picks) against the workflows
// registered on `engine`, through a read-only session: nothing is written, and a schema at
// another version than this build's is refused (DatabaseError) rather than migrated. Runs of
// workflows `engine` does not register are left out. A run whose history cannot be read is
// reported in `unreadable` and the check goes on with the others.
ReplayReport check_replay(const std::string& url, const std::string& schema, const Engine& engine,
                          const ReplayCheckOptions& options = {});

}  // namespace durable::testing
