// The fault tests' harness: fault worker processes to kill, freeze and restart, and a workload
// on a fresh schema with the checker run at its end.
#pragma once

#include <signal.h>

#include <catch2/catch.hpp>
#include <durable/testing.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fault/workload.hpp"
#include "support/process.hpp"
#include "support/test_sql.hpp"

namespace durable::fault {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Fault worker processes on one schema; each can be killed, frozen and restarted.
class Workers {
 public:
  Workers(std::string url, std::string schema) : url_(std::move(url)), schema_(std::move(schema)) {}
  ~Workers() {
    for (pid_t pid : pids_) {
      if (pid <= 0) continue;
      ::kill(pid, SIGCONT);
      ::kill(pid, SIGTERM);
      durable::test::wait_for(pid);
    }
  }
  std::size_t spawn(const std::vector<std::string>& env = {}) {
    pids_.push_back(start(pids_.size(), env));
    return pids_.size() - 1;
  }
  // Workers' standard error goes to this file from now on (for counting their log lines).
  void log_to(std::string path) { stderr_path_ = std::move(path); }
  void restart(std::size_t i, const std::vector<std::string>& env = {}) { pids_[i] = start(i, env); }
  pid_t pid(std::size_t i) const { return pids_[i]; }
  // SIGKILL and reap; returns the pid it had.
  pid_t kill(std::size_t i) {
    const pid_t pid = pids_[i];
    ::kill(pid, SIGKILL);
    durable::test::wait_for(pid);
    pids_[i] = -1;
    return pid;
  }
  // Waits for worker i to exit by itself; returns its wait status code (128 + signal when killed).
  int wait_exit(std::size_t i) {
    const int code = durable::test::wait_for(pids_[i]);
    pids_[i] = -1;
    return code;
  }
  std::size_t size() const { return pids_.size(); }

 private:
  pid_t start(std::size_t i, const std::vector<std::string>& env) {
    return durable::test::spawn_program(DURABLE_FAULT_WORKER, url_, {schema_, "fault-" + std::to_string(i)}, env,
                                        stderr_path_);
  }
  std::string url_, schema_, stderr_path_;
  std::vector<pid_t> pids_;
};

// A fresh schema with the workload's tables, and an engine (never started) that starts runs.
struct Workload {
  explicit Workload(const std::string& url_) : url(url_), schema(durable::testing::unique_schema("f")) {
    durable::fault::create_workload_tables(url, schema);
    starter = std::make_unique<durable::Engine>(durable::fault::workload_options(url, schema, "starter"));
    durable::fault::register_workload(*starter, url, schema);
  }
  ~Workload() {
    try {
      durable::testing::drop_schema(url, schema);
    } catch (...) {
    }
  }
  long long count(const std::string& sql) const {
    pqxx::connection conn(url);
    pqxx::nontransaction tx(conn);
    return tx.exec(durable::test::test_sql(sql, "\"" + schema + "\""))[0][0].as<long long>();
  }
  // Waits for the runs to end and checks them; the check is part of every fault's figures.
  Check finish(const std::string& prefix, std::chrono::seconds limit = std::chrono::seconds{300}) {
    CHECK(durable::fault::wait_all_ended(url, schema, prefix, limit));
    Check c = durable::fault::check(url, schema, prefix);
    CHECK(c.ok());
    return c;
  }
  std::string url, schema;
  std::unique_ptr<durable::Engine> starter;
};

}  // namespace durable::fault
