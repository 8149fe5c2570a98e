// Test kit: a throwaway PostgreSQL cluster, per-test schemas and a time-skipping clock.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "durable/options.hpp"

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
  };

  TemporaryPostgres();
  explicit TemporaryPostgres(Options options);
  ~TemporaryPostgres();
  TemporaryPostgres(const TemporaryPostgres&) = delete;
  TemporaryPostgres& operator=(const TemporaryPostgres&) = delete;

  // libpq conninfo for the cluster's `postgres` database, e.g. "host=/tmp/durable-pg-XXXX dbname=postgres user=durable".
  const std::string& url() const;

  // How stop() shuts the server down: `fast` disconnects clients and checkpoints; `immediate`
  // stops at once, like a crash (recovery replays the WAL at the next start).
  enum class StopMode { fast, immediate };
  // Stop the server and start it again on the same data.
  void stop(StopMode mode = StopMode::fast);
  void start();
  void restart();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

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

}  // namespace durable::testing
