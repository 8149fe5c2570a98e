// Failpoints for crash tests: in this process, or in worker processes started with them and
// waited for, with the database clock moved past the leases of those killed.
#pragma once

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/failpoint.hpp"
#include "support/process.hpp"
#include "support/test_db.hpp"

namespace durable::test {

using namespace std::chrono_literals;

// Turns this process's failpoints off when it goes out of scope.
struct FailpointsOff {
  ~FailpointsOff() { detail::configure_failpoints(""); }
};

#ifdef DURABLE_TEST_WORKER

// The worker's exit code once it exits on its own within `limit`; else it is killed and -1.
inline int exit_within(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(20ms);
  }
  kill(pid, SIGKILL);
  wait_for(pid);
  return -1;
}

// A worker serving every test definition with these failpoints.
inline pid_t worker_with(const TestDb& db, const std::string& failpoints) {
  return spawn_program(DURABLE_TEST_WORKER, db.url(), {db.schema(), "serve"}, {"DURABLE_FAILPOINTS=" + failpoints});
}

// The leases of runs and tasks that worker `pid` (killed) held end now, as they would have run out.
inline void end_leases_of(const TestDb& db, pid_t pid) {
  for (const char* table : {"tasks", "workflows"}) {
    db.query(std::string("UPDATE {s}.") + table +
             " SET lease_until = {s}.db_now() WHERE status = 'running' AND lease_owner LIKE '%:" + std::to_string(pid) +
             "'");
  }
}

// Stops each worker (SIGTERM) and waits for it.
inline void stop_workers(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    kill(pid, SIGTERM);
    wait_for(pid);
  }
}

// Past every lease a killed worker held, by the database clock, with no engine running: two
// minutes on (what was due comes due), then every lease and key hold still live ends now, as the
// dead worker's would have run out. (advance_clock alone carries live leases along, so that a
// body running across a jump is not taken over: the next worker would wait out the real lease.)
inline void past_its_leases(const TestDb& db) {
  testing::advance_clock(db.url(), db.schema(), std::chrono::minutes{2});
  db.query(R"(
WITH t AS (UPDATE {s}.tasks SET lease_until = {s}.db_now()
           WHERE status IN ('running', 'cancelled') AND lease_until > {s}.db_now() RETURNING 1),
w AS (UPDATE {s}.workflows SET lease_until = {s}.db_now()
      WHERE status = 'running' AND lease_until > {s}.db_now() RETURNING 1),
l AS (UPDATE {s}.idempotency_locks SET held_until = {s}.db_now() WHERE held_until > {s}.db_now() RETURNING 1)
SELECT 1)");
}

#endif

}  // namespace durable::test
