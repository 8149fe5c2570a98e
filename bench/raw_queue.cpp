// The limit: a minimal job queue on the same PostgreSQL.
// What a hand-written durable queue costs at the least: one committed transaction claims a job,
// another marks it done. An engine step needs at least the same (a claim and a completion), so
// the queue's jobs/s is the limit engine steps/s is judged against.
#include <fmt/format.h>

#include <future>
#include <latch>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>
#include <vector>

#include "measurements.hpp"
#include "pg_cost.hpp"

namespace bench {

namespace {

void create_jobs(const std::string& url, const std::string& schema, int jobs) {
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  tx.exec0(in_schema("CREATE SCHEMA {s}", schema));
  tx.exec0(in_schema(
      "CREATE TABLE {s}.jobs (id bigserial PRIMARY KEY, status text NOT NULL DEFAULT 'pending', payload int)", schema));
  // Claims look for the lowest pending id; without this they would step over every done job.
  tx.exec0(in_schema("CREATE INDEX jobs_pending ON {s}.jobs (id) WHERE status = 'pending'", schema));
  tx.exec_params0(in_schema("INSERT INTO {s}.jobs (payload) SELECT generate_series(1, $1)", schema), jobs);
  tx.exec0(in_schema("ANALYZE {s}.jobs", schema));
  tx.commit();
}

// A raw-queue worker's two statements.
void prepare_job_statements(pqxx::connection& conn, const std::string& schema) {
  conn.prepare("claim_job", in_schema("UPDATE {s}.jobs SET status = 'running' WHERE id = ("
                                      "SELECT id FROM {s}.jobs WHERE status = 'pending' ORDER BY id LIMIT 1 "
                                      "FOR UPDATE SKIP LOCKED) RETURNING id",
                                      schema));
  conn.prepare("finish_job", in_schema("UPDATE {s}.jobs SET status = 'done' WHERE id = $1", schema));
}

// Claims and finishes one job at a time until none is left unclaimed. Returns the jobs done.
int drain_jobs(pqxx::connection& conn) {
  for (int done = 0;; ++done) {
    long long id = 0;
    {
      pqxx::work claim(conn);
      const auto rows = claim.exec_prepared("claim_job");
      if (rows.empty()) return done;  // the rest are claimed by other workers
      id = rows[0][0].as<long long>();
      claim.commit();
    }
    pqxx::work finish(conn);
    if (finish.exec_prepared0("finish_job", id).affected_rows() != 1) {
      throw std::runtime_error(fmt::format("raw queue: job {} vanished", id));
    }
    finish.commit();
  }
}

}  // namespace

Result measure_raw_queue(const std::string& url, int jobs) {
  const int workers = durable::EngineOptions{}.activity_max_concurrency;
  progress("raw queue: {} jobs, {} worker threads, one job per claim + done transaction pair", jobs, workers);
  ScratchSchema schema(url);
  create_jobs(url, schema.name(), jobs);

  PgCostProbe cost(url);  // connecting and preparing below write nothing

  // Workers connect before the clock starts, then all begin together.
  std::latch ready(workers + 1);
  std::vector<std::future<int>> done;
  for (int w = 0; w < workers; ++w) {
    done.push_back(std::async(std::launch::async, [&] {
      std::optional<pqxx::connection> conn;
      try {
        conn.emplace(url);
        prepare_job_statements(*conn, schema.name());
      } catch (...) {
        ready.count_down();  // the others must not wait for this one forever
        throw;
      }
      ready.arrive_and_wait();
      return drain_jobs(*conn);
    }));
  }
  ready.arrive_and_wait();
  const auto start = Clock::now();
  int total = 0;
  for (auto& d : done) total += d.get();
  const double seconds = seconds_since(start);
  if (total != jobs) throw std::runtime_error(fmt::format("raw queue: {} of {} jobs done", total, jobs));

  Result result = {{"bench", "raw_queue"},
                   {"workers", workers},
                   {"jobs", jobs},
                   {"seconds", seconds},
                   {"jobs_per_s", jobs / seconds}};
  add_pg_cost(result, cost.per(jobs), "job");
  return result;
}

}  // namespace bench
