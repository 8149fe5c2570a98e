// durable-bench: durable against a hand-written job queue on the same PostgreSQL, then its
// throughput, latency (idle and under load), throughput with big tables, replay cost, and the
// WAL and write transactions it costs PostgreSQL per step.
//
//   durable-bench [--scale F] [--only raw_queue|throughput|latency|scaling|replay]
//
// The database is durable::testing::database_url(): $DURABLE_DATABASE_URL, or a throwaway
// cluster. Every measurement works in a fresh schema and drops it afterwards. Results go to
// stdout as one JSON line per measurement, then a table with the aims; progress goes to stderr.
//
// The raw queue runs first: engine throughput is reported as a ratio to its jobs/s, so
// `--only throughput` runs it too.
//
// The throughput and scaling runs re-execute this program as `durable-bench worker SCHEMA`: an
// engine process that serves the benchmark definitions until SIGTERM.
#include <durable/durable.hpp>
#include <durable/testing.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <latch>
#include <numeric>
#include <optional>
#include <pqxx/pqxx>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/serve.hpp"

namespace {

// Results keep their fields in the order written, so the JSON lines read like the table.
using Result = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// ---- The benchmark's workflow: a chain of no-op activity calls -----------------------------

struct Noop {
  static constexpr auto name = "noop";
  int operator()(durable::ActivityContext&, const int& value) const { return value; }
};

// Calls Noop `steps` times in sequence and sums the answers (so a run can be checked).
struct NoopChain {
  static constexpr auto name = "noop_chain";
  int operator()(durable::WorkflowContext& ctx, const int& steps) {
    int sum = 0;
    for (int i = 0; i < steps; ++i) sum += ctx.call<Noop>(i);
    return sum;
  }
};

void register_definitions(durable::Engine& engine) { engine.add<Noop>().add<NoopChain>(); }

// Default options but the schema, so every measurement runs what a user gets out of the box.
durable::EngineOptions engine_options(const std::string& url, const std::string& schema) {
  durable::EngineOptions options;
  options.database_url = url;
  options.schema = schema;
  return options;
}

constexpr auto result_timeout = 10min;

// A wrong sum means the run is broken, not fast.
void check_sum(int sum, int steps) {
  if (sum != steps * (steps - 1) / 2) {
    throw std::runtime_error(
        fmt::format("a {}-step run returned {}, expected {}", steps, sum, steps * (steps - 1) / 2));
  }
}

// Starts a chain run and waits for its result.
void run_chain(durable::Engine& engine, const std::string& id, int steps) {
  check_sum(engine.start_workflow<NoopChain>(id, steps).result(result_timeout), steps);
}

// ---- Shared helpers: timing, percentiles, schemas, worker processes ------------------------

std::string processes_text(int processes) {
  return fmt::format("{} engine process{}", processes, processes == 1 ? "" : "es");
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Nearest-rank percentile of an ascending vector.
double percentile(const std::vector<double>& sorted, double p) {
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

template <typename... Args>
void progress(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "[bench] {}\n", fmt::format(format, std::forward<Args>(args)...));
  std::fflush(stderr);
}

// A fresh schema for one measurement, dropped when it ends (also when it fails).
class ScratchSchema {
 public:
  explicit ScratchSchema(std::string url) : url_(std::move(url)), name_(durable::testing::unique_schema("bench")) {}
  ~ScratchSchema() {
    try {
      durable::testing::drop_schema(url_, name_);
    } catch (const std::exception& e) {
      fmt::print(stderr, "[bench] could not drop schema {}: {}\n", name_, e.what());
    }
  }
  ScratchSchema(const ScratchSchema&) = delete;
  ScratchSchema& operator=(const ScratchSchema&) = delete;
  const std::string& name() const { return name_; }

 private:
  std::string url_, name_;
};

// SQL written against `{s}`, the schema. The benchmark's schema names come from
// durable::testing::unique_schema, which only makes plain lowercase identifiers: no quoting needed.
std::string in_schema(const std::string& sql, const std::string& schema) {
  return fmt::format(fmt::runtime(sql), fmt::arg("s", schema));
}

// Reads one line from `fd`, giving up after `timeout` or at end of file.
std::string read_line(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string line;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd watched{};
    watched.fd = fd;
    watched.events = POLLIN;
    if (left.count() <= 0 || poll(&watched, 1, static_cast<int>(left.count())) <= 0) return line;
    char c = 0;
    if (read(fd, &c, 1) != 1 || c == '\n') return line;
    line += c;
  }
}

// Engine processes for the throughput runs: this program re-executed as `worker SCHEMA`.
// They are stopped with SIGTERM (and reaped) when this object goes away.
class WorkerProcesses {
 public:
  WorkerProcesses(const std::string& url, const std::string& schema, int count) {
    try {
      for (int i = 0; i < count; ++i) spawn(url, schema);
      // All start in parallel; each says "ready" once its engine has started.
      for (const auto& w : workers_) {
        const std::string line = read_line(w.stdout_fd, 60s);
        if (line != "ready")
          throw std::runtime_error(fmt::format("worker {} did not get ready (said '{}')", w.pid, line));
      }
    } catch (...) {
      stop();
      throw;
    }
  }
  ~WorkerProcesses() { stop(); }
  WorkerProcesses(const WorkerProcesses&) = delete;
  WorkerProcesses& operator=(const WorkerProcesses&) = delete;

 private:
  struct Worker {
    pid_t pid = 0;
    int stdout_fd = -1;
  };

  void spawn(const std::string& url, const std::string& schema) {
    // Everything execve needs is built before fork: the child only calls async-signal-safe functions.
    std::vector<std::string> args = {"durable-bench", "worker", schema};
    std::vector<std::string> env = {"DURABLE_DATABASE_URL=" + url};  // so a throwaway cluster is shared
    for (char** e = environ; *e; ++e) {
      if (std::string_view(*e).rfind("DURABLE_DATABASE_URL=", 0) != 0) env.emplace_back(*e);
    }
    auto pointers = [](std::vector<std::string>& strings) {
      std::vector<char*> out;
      for (auto& s : strings) out.push_back(s.data());
      out.push_back(nullptr);
      return out;
    };
    std::vector<char*> argv = pointers(args), envp = pointers(env);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      throw std::runtime_error("fork failed");
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // no stray engines if the benchmark itself dies
      dup2(fds[1], STDOUT_FILENO);       // "ready" comes back through the pipe
      execve("/proc/self/exe", argv.data(), envp.data());
      _exit(127);
    }
    close(fds[1]);
    workers_.push_back({pid, fds[0]});
  }

  void stop() {
    for (const auto& w : workers_) kill(w.pid, SIGTERM);
    for (const auto& w : workers_) {
      int status = 0;
      while (waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fmt::print(stderr, "[bench] worker {} ended abnormally (wait status {})\n", w.pid, status);
      }
      close(w.stdout_fd);
    }
    workers_.clear();
  }

  std::vector<Worker> workers_;
};

// ---- PostgreSQL cost: WAL bytes and write transactions per unit of work ---------------------

struct PgCost {
  double wal_bytes = 0;                   // per unit
  double write_xacts = 0;                 // per unit
  std::optional<double> server_cpu_us{};  // per unit; empty when the server is not on this machine
};

// CPU time (user + system, microseconds) the PostgreSQL server on this machine has used: its
// postmaster's own and that of its children, live ones read one by one, ended ones from the
// postmaster's total of waited-for children. Empty when the data directory's postmaster.pid is
// not readable here (a remote server).
std::optional<double> server_cpu_us(pqxx::connection& conn) {
  std::string data_dir;
  {
    pqxx::nontransaction tx(conn);
    data_dir = tx.exec1("SELECT setting FROM pg_settings WHERE name = 'data_directory'")[0].as<std::string>();
  }
  std::ifstream pid_file(data_dir + "/postmaster.pid");
  long postmaster = 0;
  if (!(pid_file >> postmaster)) return std::nullopt;
  // /proc/PID/stat: "pid (comm) state ppid ..."; utime, stime, cutime, cstime are fields 14-17.
  auto fields_of = [](const std::filesystem::path& stat) -> std::vector<std::string> {
    std::ifstream in(stat);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) return {};
    std::vector<std::string> fields;  // from field 3 (state) on
    std::istringstream rest(text.substr(close + 2));
    for (std::string f; rest >> f;) fields.push_back(f);
    return fields;
  };
  double ticks = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const auto f = fields_of(entry.path() / "stat");
    if (f.size() < 15) continue;
    const long pid = std::stol(name);
    const long ppid = std::stol(f[1]);
    if (pid != postmaster && ppid != postmaster) continue;
    ticks += std::stod(f[11]) + std::stod(f[12]);                         // utime, stime
    if (pid == postmaster) ticks += std::stod(f[13]) + std::stod(f[14]);  // cutime, cstime: ended children
  }
  return ticks * 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// WAL and write transactions the server produced between construction and per(). Both
// counters are server-wide, so anything else running on the server (autovacuum included) is
// counted too: the benchmark assumes it has the server to itself.
//  - WAL bytes: the growth of pg_current_wal_insert_lsn(). Not pg_current_wal_lsn(): that is
//    where WAL has been written out to, and lags behind records of asynchronous commits (the
//    engine's claims) still in the WAL buffers.
//  - Write transactions: PostgreSQL gives a transaction an id only when it writes, locks a row
//    or NOTIFYs, so the growth of txid_current() counts them. Reading txid_current() gives the
//    probe's own transaction an id too: the reading before takes id B, the one after takes A,
//    and the A - B - 1 ids in between went to the measured work.
//  The probe's two commits stay out of the WAL figure: the first reading commits its id before
//  it reads the LSN, the last reads the LSN before it takes an id.
class PgCostProbe {
 public:
  explicit PgCostProbe(const std::string& url) : conn_(url) {
    before_cpu_us_ = server_cpu_us(conn_);
    before_xid_ = take_xid();
    pqxx::nontransaction tx(conn_);
    before_lsn_ = tx.exec1("SELECT pg_current_wal_insert_lsn()::text")[0].as<std::string>();
  }

  PgCost per(double units) {
    long long wal = 0;
    {
      pqxx::nontransaction tx(conn_);
      wal = tx.exec_params1("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint", before_lsn_)[0]
                .as<long long>();
    }
    const long long xacts = take_xid() - before_xid_ - 1;
    PgCost cost{static_cast<double>(wal) / units, static_cast<double>(xacts) / units};
    const auto cpu = server_cpu_us(conn_);
    if (cpu && before_cpu_us_) cost.server_cpu_us = (*cpu - *before_cpu_us_) / units;
    return cost;
  }

 private:
  long long take_xid() {
    pqxx::work tx(conn_);
    const auto xid = tx.exec1("SELECT txid_current()")[0].as<long long>();
    tx.commit();
    return xid;
  }

  pqxx::connection conn_;
  std::optional<double> before_cpu_us_;
  long long before_xid_ = 0;
  std::string before_lsn_;
};

void add_pg_cost(Result& result, const PgCost& cost, const std::string& unit) {
  result["wal_bytes_per_" + unit] = cost.wal_bytes;
  result["write_xacts_per_" + unit] = cost.write_xacts;
  result["pg_cpu_us_per_" + unit] = cost.server_cpu_us ? durable::Json(*cost.server_cpu_us) : durable::Json();
}

// ---- The limit: a minimal job queue on the same PostgreSQL -------------------------------------

// What a hand-written durable queue costs at the least: one committed transaction claims a job,
// another marks it done. An engine step needs at least the same (a claim and a completion), so
// the queue's jobs/s is the limit engine steps/s is judged against.
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

// `jobs` jobs drained by as many worker threads (each with its own connection) as an engine
// runs activities at once by default.
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

// ---- Throughput ------------------------------------------------------------------------------

using ChainHandle = durable::WorkflowHandle<int>;

// Starts `count` chain runs named PREFIX-i from as many threads as the client has connections,
// so one client's commit latency does not cap the rate at which work reaches the engines.
std::vector<ChainHandle> start_runs(durable::Engine& client, const std::string& prefix, int count, int steps) {
  const int threads = client.options().connection_pool_size;
  std::vector<std::future<std::vector<ChainHandle>>> parts;
  for (int t = 0; t < threads; ++t) {
    parts.push_back(std::async(std::launch::async, [&, t] {
      std::vector<ChainHandle> mine;
      for (int i = t; i < count; i += threads) {
        mine.push_back(client.start_workflow<NoopChain>(fmt::format("{}-{}", prefix, i), steps));
      }
      return mine;
    }));
  }
  std::vector<ChainHandle> runs;
  for (auto& part : parts) {
    for (auto& run : part.get()) runs.push_back(std::move(run));
  }
  return runs;
}

// The client hears of each end in the worker processes from their NOTIFY (its engine LISTENs
// from its first wait on), so the last result is noticed as soon as it is committed.
void wait_for_all(const std::vector<ChainHandle>& runs, int steps) {
  for (const auto& run : runs) check_sum(run.result(result_timeout), steps);
}

// When the runs are started, relative to the clock.
//  - queued_first: all runs are started before any engine runs, untimed, and the clock runs
//    from starting the engine processes (their start-up counts) to the last result. Like for like
//    with the raw queue, whose jobs are inserted before its clock starts: the engines only drain.
//  - while_running: the engines are up and warm; the clock runs from the first start to the last
//    result, so every start is timed too (end to end).
enum class Starts { queued_first, while_running };

const char* starts_text(Starts starts) { return starts == Starts::queued_first ? "queued first" : "while running"; }

// `workflows` runs of `steps` steps in `schema`, served by `processes` worker processes; this
// process is only a client (its engine is never started), so 1 and 3 processes are measured
// the same way. The PostgreSQL cost covers the timed part.
Result run_throughput(const std::string& url, const std::string& schema, int steps, int processes, int workflows,
                      Starts starts) {
  std::optional<WorkerProcesses> workers;  // declared first: stopped after the client is gone
  durable::Engine client(engine_options(url, schema));
  register_definitions(client);  // start_workflow checks the input against the registered type
  std::vector<ChainHandle> runs;
  if (starts == Starts::queued_first) {
    runs = start_runs(client, "run", workflows, steps);  // they wait in the tables: no engine runs yet
  } else {
    workers.emplace(url, schema, processes);
    // Untimed warm-up: connections opened and statements prepared in the client and the workers.
    wait_for_all(start_runs(client, "warm-up", 2 * processes, steps), steps);
  }

  PgCostProbe cost(url);
  const auto start = Clock::now();
  if (starts == Starts::queued_first) {
    workers.emplace(url, schema, processes);
  } else {
    runs = start_runs(client, "run", workflows, steps);
  }
  // How long the engines took to come up, or the client to start every run: shows whether that was the bottleneck.
  const double start_seconds = seconds_since(start);
  wait_for_all(runs, steps);
  const double seconds = seconds_since(start);

  Result result = {{"bench", "throughput"},
                   {"steps", steps},
                   {"processes", processes},
                   {"starts", starts == Starts::queued_first ? "queued_first" : "while_running"},
                   {"workflows", workflows},
                   {"seconds", seconds},
                   {"start_seconds", start_seconds},
                   {"workflows_per_s", workflows / seconds},
                   {"steps_per_s", workflows * steps / seconds}};
  add_pg_cost(result, cost.per(workflows * steps), "step");
  return result;
}

Result measure_throughput(const std::string& url, int steps, int processes, int workflows, Starts starts) {
  progress("throughput: {} x {}-step workflows on {}, runs started {}", workflows, steps, processes_text(processes),
           starts_text(starts));
  ScratchSchema schema(url);
  return run_throughput(url, schema.name(), steps, processes, workflows, starts);
}

// Engine throughput over the raw queue's jobs/s (when it ran): 1.0 means a workflow step
// costs what a hand-written queue's job does.
void compare_to_raw_queue(Result& result, std::optional<double> raw_jobs_per_s) {
  if (!raw_jobs_per_s) return;
  result["workflows_ratio_to_raw_queue"] = result["workflows_per_s"].get<double>() / *raw_jobs_per_s;
  result["ratio_to_raw_queue"] = result["steps_per_s"].get<double>() / *raw_jobs_per_s;
}

constexpr double aim_ratio_to_raw_queue = 1.0;  // for 10-step workflows

void set_raw_queue_aim(Result& result) {
  if (!result.contains("ratio_to_raw_queue")) return;
  result["aim_ratio_to_raw_queue"] = aim_ratio_to_raw_queue;
  result["aim_met"] = result["ratio_to_raw_queue"].get<double>() >= aim_ratio_to_raw_queue;
}

// ---- Latency -----------------------------------------------------------------------------------

constexpr double aim_p50_ms = 5.0;  // idle

// Start-to-result times, in ms, of `runs` 1-step runs started one after another, after an
// untimed warm-up (connections, prepared statements).
std::vector<double> time_one_step_runs(durable::Engine& engine, int runs) {
  for (int i = 0; i < 5; ++i) run_chain(engine, fmt::format("warm-up-{}", i), 1);
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    run_chain(engine, fmt::format("run-{}", i), 1);
    ms.push_back(seconds_since(start) * 1000.0);
  }
  return ms;
}

void add_latency_figures(Result& result, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  result["p50_ms"] = percentile(ms, 50);
  result["p99_ms"] = percentile(ms, 99);
  result["mean_ms"] = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  result["max_ms"] = ms.back();
}

// An in-process engine on a fresh schema, started: latency is judged where the result is
// noticed at once (no polling client between).
struct StartedEngine {
  explicit StartedEngine(const std::string& url) : schema(url), engine(engine_options(url, schema.name())) {
    register_definitions(engine);
    engine.start();
  }
  ScratchSchema schema;  // declared first: dropped after the engine has stopped
  durable::Engine engine;
};

// Start-to-result time of 1-step runs, one at a time, on an otherwise idle in-process engine.
Result measure_idle_latency(const std::string& url, int runs) {
  progress("latency: {} sequential 1-step workflows on an idle engine", runs);
  StartedEngine started(url);
  Result result = {{"bench", "latency"}, {"steps", 1}, {"runs", runs}};
  add_latency_figures(result, time_one_step_runs(started.engine, runs));
  result["aim_p50_ms"] = aim_p50_ms;
  result["aim_met"] = result["p50_ms"].get<double>() < aim_p50_ms;
  return result;
}

// Keeps `in_flight` chain runs of `steps` steps going on an engine, from a thread of its own,
// until stopped: whenever the oldest ends, another starts.
class BackgroundLoad {
 public:
  BackgroundLoad(durable::Engine& engine, int in_flight, int steps)
      : thread_(std::async(std::launch::async, [this, &engine, in_flight, steps] { run(engine, in_flight, steps); })) {}
  ~BackgroundLoad() { stop_ = true; }  // the future's destructor waits for the thread
  BackgroundLoad(const BackgroundLoad&) = delete;
  BackgroundLoad& operator=(const BackgroundLoad&) = delete;

  int ended() const { return ended_; }

  // Waits until `count` runs have ended (the load has reached its steady state).
  void wait_until_ended(int count) {
    while (ended_ < count) {
      if (thread_.wait_for(10ms) == std::future_status::ready) {
        thread_.get();  // rethrows why the load failed
        throw std::runtime_error("the background load stopped early");
      }
    }
  }

  // Stops the load, leaving its last runs unfinished; rethrows a failure of the load.
  void stop() {
    stop_ = true;
    thread_.get();
  }

 private:
  void run(durable::Engine& engine, int in_flight, int steps) {
    std::deque<ChainHandle> running;
    for (int started = 0; !stop_;) {
      while (static_cast<int>(running.size()) < in_flight) {
        running.push_back(engine.start_workflow<NoopChain>(fmt::format("load-{}", started++), steps));
      }
      check_sum(running.front().result(result_timeout), steps);
      running.pop_front();
      ++ended_;
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int> ended_{0};
  std::future<void> thread_;  // declared last: the thread starts once the counters exist
};

// The same 1-step start-to-result time while the same engine also runs a steady load of
// 10-step workflows started from another thread.
Result measure_loaded_latency(const std::string& url, int runs) {
  constexpr int in_flight = 20, load_steps = 10;
  progress("latency: {} sequential 1-step workflows while {} x {}-step workflows keep running", runs, in_flight,
           load_steps);
  StartedEngine started(url);
  BackgroundLoad load(started.engine, in_flight, load_steps);
  load.wait_until_ended(in_flight);

  const int ended_before = load.ended();
  const auto start = Clock::now();
  auto ms = time_one_step_runs(started.engine, runs);
  const double load_steps_per_s = (load.ended() - ended_before) * load_steps / seconds_since(start);
  load.stop();

  Result result = {{"bench", "latency_under_load"},
                   {"steps", 1},
                   {"runs", runs},
                   {"load_in_flight", in_flight},
                   {"load_steps", load_steps},
                   {"load_steps_per_s", load_steps_per_s}};
  add_latency_figures(result, std::move(ms));
  return result;
}

// ---- Scaling: throughput with big tables -------------------------------------------------------

// A database state the scaling runs start from: rows loaded into a freshly migrated schema.
struct TableState {
  std::string name;                     // "state" in the JSON
  std::string description;              // for the table
  int rows = 0;                         // tasks queued or workflows completed
  std::vector<std::string> load_sql{};  // one statement per table; {s} schema, {rows} rows
};

// What the engine stores as a task's options (and an activity_scheduled event's) for a call
// with default ActivityOptions: copied from a real run.
constexpr auto default_task_options =
    R"('{"jitter": 0.0, "backoff": "constant", "base_ms": 0, "timeout_ms": 30000, "max_attempts": 1, )"
    R"("max_backoff_ms": 60000, "idempotency_key_hex": null, "max_retry_horizon_ms": 86400000, )"
    R"("non_retryable_errors": []}'::jsonb)";

// Activity tasks queued for another service: pending, due an hour ago, for an activity and a
// workflow no engine here registers. Each has its parent workflow waiting (running, not
// runnable) for it. A backlog every task claim has to look past.
std::vector<std::string> queued_tasks_sql() {
  return {R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, next_seq, runnable, created_at, updated_at)
SELECT 'queued-' || g, md5('queued-' || g)::uuid, 'served_elsewhere', 'running', '0', 2, false,
       now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, {rows}) AS g)",
          R"(
INSERT INTO {s}.tasks (workflow_id, step, name, input, options, status, available_at, created_at, updated_at)
SELECT 'queued-' || g, 0, 'served_elsewhere', '0', {options}, 'pending',
       now() - interval '1 hour' + g * interval '1 millisecond', now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, {rows}) AS g)"};
}

// History: completed 1-step noop_chain runs with every row a real one leaves behind: the
// workflow, its four journal events, its task and the task's attempt, and its run.
std::vector<std::string> completed_workflows_sql() {
  return {R"(
INSERT INTO {s}.workflows (workflow_id, run_id, name, status, input, result, next_seq, runnable, claim_token,
                          created_at, updated_at, ended_at)
SELECT 'done-' || g, md5('done-' || g)::uuid, '{workflow}', 'completed', '1', '0', 4, false,
       md5('claim-' || g)::uuid::text, now() - interval '1 day', now() - interval '1 day', now() - interval '1 day'
FROM generate_series(1, {rows}) AS g)",
          R"(
INSERT INTO {s}.journal (workflow_id, seq, kind, step, name, data, created_at)
SELECT 'done-' || g, e.seq, e.kind, e.step, e.name, e.data, now() - interval '1 day'
FROM generate_series(1, {rows}) AS g,
     (VALUES (0, 'workflow_started', NULL::integer, NULL::text, jsonb_build_object('input', 1)),
             (1, 'activity_scheduled', 0, '{activity}', jsonb_build_object('input', 0, 'options', {options})),
             (2, 'activity_completed', 0, '{activity}', jsonb_build_object('result', 0, 'attempts', 1)),
             (3, 'workflow_completed', NULL, NULL, jsonb_build_object('result', 0))) AS e(seq, kind, step, name, data))",
          R"(
INSERT INTO {s}.tasks (workflow_id, step, name, input, options, status, attempt, available_at, lease_token,
                      lease_owner, claim_token, attempt_started_at, first_started_at, result, created_at, updated_at)
SELECT 'done-' || g, 0, '{activity}', '0', {options}, 'completed', 1, now() - interval '1 day', g,
       'default@loaded', md5('task-claim-' || g)::uuid::text, now() - interval '1 day', now() - interval '1 day', '0',
       now() - interval '1 day', now() - interval '1 day'
FROM generate_series(1, {rows}) AS g)",
          R"(
INSERT INTO {s}.runs (run_id, workflow_id, name, status, started_at, ended_at)
SELECT md5('done-' || g)::uuid, 'done-' || g, '{workflow}', 'completed', now() - interval '1 day',
       now() - interval '1 day'
FROM generate_series(1, {rows}) AS g)",
          // After the tasks: one attempt per task just loaded (the schema holds nothing else).
          R"(
INSERT INTO {s}.attempts (task_id, attempt, started_at, ended_at, outcome)
SELECT task_id, 1, attempt_started_at, updated_at, 'completed' FROM {s}.tasks)"};
}

// Runs an engine on `schema` once, which creates the tables at the current schema version.
void migrate(const std::string& url, const std::string& schema) {
  durable::Engine engine(engine_options(url, schema));
  register_definitions(engine);
  engine.start();
}

// Loads the state's rows in one transaction, then leaves the tables as a long-running system
// would have them: vacuumed (visibility map and hint bits set, so the timed run does not pay
// for first touches of the loaded pages), analyzed (the planner knows the row counts), and
// checkpointed (the timed run does not pay for the load's full-page writes).
void load_rows(const std::string& url, const std::string& schema, const TableState& state) {
  pqxx::connection conn(url);
  auto start = Clock::now();
  {
    pqxx::work tx(conn);
    for (const auto& sql : state.load_sql) {
      tx.exec0(fmt::format(fmt::runtime(sql), fmt::arg("s", schema), fmt::arg("rows", state.rows),
                           fmt::arg("workflow", NoopChain::name), fmt::arg("activity", Noop::name),
                           fmt::arg("options", default_task_options)));
    }
    tx.commit();
  }
  progress("scaling: inserted in {:.1f} s", seconds_since(start));
  start = Clock::now();
  pqxx::nontransaction tx(conn);  // VACUUM and CHECKPOINT cannot run inside a transaction
  tx.exec0(in_schema("VACUUM ANALYZE {s}.workflows, {s}.journal, {s}.tasks, {s}.runs, {s}.attempts", schema));
  progress("scaling: vacuumed and analyzed in {:.1f} s", seconds_since(start));
  start = Clock::now();
  try {
    tx.exec0("CHECKPOINT");
  } catch (const pqxx::sql_error& e) {  // needs superuser or pg_checkpoint: run without it
    progress("scaling: no CHECKPOINT after loading ({})", e.what());
  }
  progress("scaling: checkpointed in {:.1f} s", seconds_since(start));
}

constexpr double aim_ratio_to_empty = 0.8;

// 10-step throughput on one engine process, starting from `state`.
Result measure_scaling(const std::string& url, const TableState& state, int workflows) {
  progress("scaling: {} x 10-step workflows on 1 engine process, {}", workflows, state.description);
  ScratchSchema schema(url);
  migrate(url, schema.name());
  const auto start = Clock::now();
  load_rows(url, schema.name(), state);
  const double load_seconds = seconds_since(start);
  progress("scaling: loaded {} ({} rows) in {:.1f} s", state.description, state.rows, load_seconds);

  Result result = {{"bench", "scaling"}, {"state", state.name}, {"rows", state.rows}, {"load_seconds", load_seconds}};
  const Result throughput = run_throughput(url, schema.name(), 10, 1, workflows, Starts::while_running);
  for (const auto& [field, value] : throughput.items()) {
    if (field != "bench") result[field] = value;
  }
  return result;
}

void compare_to_empty(Result& result, double empty_steps_per_s) {
  const double ratio = result["steps_per_s"].get<double>() / empty_steps_per_s;
  result["ratio_to_empty"] = ratio;
  result["aim_ratio_to_empty"] = aim_ratio_to_empty;
  result["aim_met"] = ratio >= aim_ratio_to_empty;
}

// ---- Replay cost -------------------------------------------------------------------------------

constexpr double aim_replay_ratio = 1.2;

// Per-step time of one long sequential run against short ones. Each step replays the
// workflow from the top, so this shows whether replay cost grows with the journal.
Result measure_replay(const std::string& url, int short_runs) {
  constexpr int short_steps = 10;
  constexpr int long_steps = 1000;
  progress("replay: {} x {}-step workflows, then one {}-step workflow", short_runs, short_steps, long_steps);
  StartedEngine started(url);
  durable::Engine& engine = started.engine;
  run_chain(engine, "warm-up", short_steps);

  auto start = Clock::now();
  for (int i = 0; i < short_runs; ++i) run_chain(engine, fmt::format("short-{}", i), short_steps);
  const double short_ms = seconds_since(start) * 1000.0 / (short_runs * short_steps);

  start = Clock::now();
  run_chain(engine, "long", long_steps);
  const double long_seconds = seconds_since(start);
  const double long_ms = long_seconds * 1000.0 / long_steps;

  const double ratio = long_ms / short_ms;
  return {{"bench", "replay"},
          {"short_steps", short_steps},
          {"short_runs", short_runs},
          {"short_ms_per_step", short_ms},
          {"long_steps", long_steps},
          {"long_seconds", long_seconds},
          {"long_ms_per_step", long_ms},
          {"ratio", ratio},
          {"aim_ratio", aim_replay_ratio},
          {"aim_met", ratio <= aim_replay_ratio}};
}

// ---- Command line ------------------------------------------------------------------------------

// A bad command line: main prints the usage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double parse_scale(const std::string& text) {
  std::size_t used = 0;
  double scale = 0;
  try {
    scale = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(scale > 0)) throw UsageError(fmt::format("--scale takes a number > 0, not '{}'", text));
  return scale;
}

const std::vector<std::string> measurement_names = {"raw_queue", "throughput", "latency", "scaling", "replay"};

struct Config {
  double scale = 1.0;  // multiplies every workflow, job and loaded row count (not the 1000 steps of the long run)
  std::string only{};  // empty: all measurements
  int scaled(int count) const { return std::max(1, static_cast<int>(std::lround(count * scale))); }
  bool wants(const std::string& name) const { return only.empty() || only == name; }
};

Config parse_args(const std::vector<std::string>& args) {
  Config config;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if ((args[i] == "--scale" || args[i] == "--only") && i + 1 == args.size()) {
      throw UsageError(fmt::format("{} needs a value", args[i]));
    }
    if (args[i] == "--scale") {
      config.scale = parse_scale(args[++i]);
    } else if (args[i] == "--only") {
      config.only = args[++i];
      if (std::find(measurement_names.begin(), measurement_names.end(), config.only) == measurement_names.end()) {
        throw UsageError(fmt::format("--only takes one of {}", fmt::join(measurement_names, ", ")));
      }
    } else {
      throw UsageError(fmt::format("unknown argument '{}'", args[i]));
    }
  }
  return config;
}

// ---- The report --------------------------------------------------------------------------------

const char* verdict(const Result& result) { return result["aim_met"].get<bool>() ? "met" : "NOT met"; }

// "0.42x", or "-" when the result has no such ratio (its reference was not measured).
std::string ratio_text(const Result& result, const char* field) {
  return result.contains(field) ? fmt::format("{:.2f}x", result[field].get<double>()) : "-";
}

std::vector<Result> of_kind(const std::vector<Result>& results, const char* bench) {
  std::vector<Result> out;
  std::copy_if(results.begin(), results.end(), std::back_inserter(out),
               [&](const Result& r) { return r["bench"] == bench; });
  return out;
}

std::string cpu_text(const Result& r, const std::string& key) {
  return r.contains(key) && r[key].is_number() ? fmt::format("{:.0f}", r[key].get<double>()) : std::string("-");
}

void print_raw_queue(const Result& r) {
  fmt::print(
      "\nraw queue (the limit): {} jobs, {} workers, {:.2f} s: {:.1f} jobs/s, {:.0f} WAL bytes/job, "
      "{:.2f} write xacts/job, {} us of PostgreSQL CPU/job\n",
      r["jobs"].get<int>(), r["workers"].get<int>(), r["seconds"].get<double>(), r["jobs_per_s"].get<double>(),
      r["wal_bytes_per_job"].get<double>(), r["write_xacts_per_job"].get<double>(), cpu_text(r, "pg_cpu_us_per_job"));
}

// Throughput figures shared by the throughput and scaling tables.
constexpr auto throughput_header = "{:>9} {:>8} {:>11} {:>8} {:>7} {:>9} {:>10} {:>10} {:>12}";
std::string throughput_columns(const Result& r) {
  return fmt::format("{:>9} {:>8.2f} {:>11.1f} {:>8.1f} {:>7} {:>9} {:>10.0f} {:>10.2f} {:>12}",
                     r["workflows"].get<int>(), r["seconds"].get<double>(), r["workflows_per_s"].get<double>(),
                     r["steps_per_s"].get<double>(), ratio_text(r, "workflows_ratio_to_raw_queue"),
                     ratio_text(r, "ratio_to_raw_queue"), r["wal_bytes_per_step"].get<double>(),
                     r["write_xacts_per_step"].get<double>(), cpu_text(r, "pg_cpu_us_per_step"));
}
std::string throughput_titles() {
  return fmt::format(fmt::runtime(throughput_header), "workflows", "seconds", "workflows/s", "steps/s", "wf/raw",
                     "steps/raw", "WAL B/step", "xacts/step", "PG CPU us/st");
}

void print_throughput(const std::vector<Result>& rows) {
  if (rows.empty()) return;
  fmt::print("\n{:<11} {:>5} {:>9} {:>13} {}\n", "throughput", "steps", "processes", "runs started",
             throughput_titles());
  for (const auto& r : rows) {
    const bool queued_first = r["starts"] == "queued_first";
    fmt::print("{:<11} {:>5} {:>9} {:>13} {}\n", "", r["steps"].get<int>(), r["processes"].get<int>(),
               starts_text(queued_first ? Starts::queued_first : Starts::while_running), throughput_columns(r));
  }
}

void print_latency(const Result& r, const std::string& title) {
  fmt::print("\n{}: {} runs, p50 {:.1f} ms, p99 {:.1f} ms, mean {:.1f} ms, max {:.1f} ms\n", title,
             r["runs"].get<int>(), r["p50_ms"].get<double>(), r["p99_ms"].get<double>(), r["mean_ms"].get<double>(),
             r["max_ms"].get<double>());
}

void print_scaling(const std::vector<Result>& rows) {
  if (rows.empty()) return;
  fmt::print("\n{:<21} {:>7} {:>7} {:>8} {}\n", "scaling (10-step, 1p)", "rows", "load s", "vs empty",
             throughput_titles());
  for (const auto& r : rows) {
    fmt::print("{:<21} {:>7} {:>7.1f} {:>8} {}\n", r["state"].get<std::string>(), r["rows"].get<int>(),
               r["load_seconds"].get<double>(), ratio_text(r, "ratio_to_empty"), throughput_columns(r));
  }
}

void print_replay(const Result& r) {
  fmt::print(
      "\nreplay cost: {}-step runs {:.2f} ms/step ({} runs), {}-step run {:.2f} ms/step ({:.1f} s), "
      "ratio {:.2f}\n",
      r["short_steps"].get<int>(), r["short_ms_per_step"].get<double>(), r["short_runs"].get<int>(),
      r["long_steps"].get<int>(), r["long_ms_per_step"].get<double>(), r["long_seconds"].get<double>(),
      r["ratio"].get<double>());
}

// One line per result that carries an aim: what, the figure, the aim, met or NOT met.
void print_aims(const std::vector<Result>& results) {
  std::vector<std::array<std::string, 4>> lines;
  for (const auto& r : results) {
    if (!r.contains("aim_met")) continue;
    const std::string bench = r["bench"];
    if (bench == "throughput") {
      lines.push_back({fmt::format("{}-step steps/s vs raw queue jobs/s, {}, queued first", r["steps"].get<int>(),
                                   processes_text(r["processes"].get<int>())),
                       ratio_text(r, "ratio_to_raw_queue"), fmt::format(">= {:.1f}x", aim_ratio_to_raw_queue)});
    } else if (bench == "latency") {
      lines.push_back({"idle start-to-result p50, 1-step workflow", fmt::format("{:.1f} ms", r["p50_ms"].get<double>()),
                       fmt::format("< {:.0f} ms", aim_p50_ms)});
    } else if (bench == "scaling") {
      lines.push_back({fmt::format("10-step steps/s with {} vs empty", r["state"].get<std::string>()),
                       ratio_text(r, "ratio_to_empty"), fmt::format(">= {:.1f}x", aim_ratio_to_empty)});
    } else if (bench == "replay") {
      lines.push_back({"per-step time, 1000-step vs 10-step workflow", ratio_text(r, "ratio"),
                       fmt::format("<= {:.1f}x", aim_replay_ratio)});
    }
    lines.back()[3] = verdict(r);
  }
  if (lines.empty()) return;
  fmt::print("\n{:<70} {:>8} {:>8}  {}\n", "aim", "result", "target", "verdict");
  for (const auto& [what, figure, aim, met] : lines) fmt::print("{:<70} {:>8} {:>8}  {}\n", what, figure, aim, met);
}

void print_table(const std::vector<Result>& results) {
  for (const auto& r : of_kind(results, "raw_queue")) print_raw_queue(r);
  print_throughput(of_kind(results, "throughput"));
  for (const auto& r : of_kind(results, "latency")) print_latency(r, "idle latency, 1-step workflow");
  for (const auto& r : of_kind(results, "latency_under_load")) {
    print_latency(r, fmt::format("latency under load ({} x {}-step in flight, {:.0f} steps/s), 1-step workflow",
                                 r["load_in_flight"].get<int>(), r["load_steps"].get<int>(),
                                 r["load_steps_per_s"].get<double>()));
  }
  print_scaling(of_kind(results, "scaling"));
  for (const auto& r : of_kind(results, "replay")) print_replay(r);
  print_aims(results);
  std::fflush(stdout);
}

// ---- Running it all ----------------------------------------------------------------------------

// Counts at --scale 1: each timed run lasts several seconds (shorter ones are at the mercy of
// noise on a shared machine), and the whole suite takes about 7 minutes on 2 cores, most of it
// loading the million completed workflows.
constexpr int raw_queue_jobs = 10'000;
constexpr int one_step_workflows = 1000;
constexpr int ten_step_workflows = 400;  // also each scaling run
constexpr int latency_runs = 200;
constexpr int replay_short_runs = 20;
constexpr int queued_tasks = 100'000;
constexpr int completed_workflows = 1'000'000;

std::vector<TableState> scaling_states(const Config& config) {
  const int queued = config.scaled(queued_tasks), completed = config.scaled(completed_workflows);
  return {
      {"empty", "empty tables", 0},
      {"queued_tasks", fmt::format("{} activity tasks queued for another service", queued), queued, queued_tasks_sql()},
      {"completed_workflows", fmt::format("{} completed workflows", completed), completed, completed_workflows_sql()}};
}

int run_benchmarks(const Config& config) {
  const std::string& url = durable::testing::database_url();
  std::vector<Result> results;
  auto report = [&](Result result) {
    fmt::print("{}\n", result.dump());
    std::fflush(stdout);
    results.push_back(std::move(result));
  };

  std::optional<double> raw_jobs_per_s;
  if (config.wants("raw_queue") || config.wants("throughput")) {
    Result raw = measure_raw_queue(url, config.scaled(raw_queue_jobs));
    raw_jobs_per_s = raw["jobs_per_s"].get<double>();
    report(std::move(raw));
  }
  if (config.wants("throughput")) {
    for (const auto& [steps, workflows] : {std::pair{1, one_step_workflows}, std::pair{10, ten_step_workflows}}) {
      for (int processes : {1, 3}) {
        for (Starts starts : {Starts::queued_first, Starts::while_running}) {
          Result r = measure_throughput(url, steps, processes, config.scaled(workflows), starts);
          compare_to_raw_queue(r, raw_jobs_per_s);
          // The aim compares like with like: the raw queue's jobs are queued before its clock starts.
          if (steps == 10 && starts == Starts::queued_first) set_raw_queue_aim(r);
          report(std::move(r));
        }
      }
    }
  }
  if (config.wants("latency")) {
    report(measure_idle_latency(url, config.scaled(latency_runs)));
    report(measure_loaded_latency(url, config.scaled(latency_runs)));
  }
  if (config.wants("scaling")) {
    std::optional<double> empty_steps_per_s;  // the first state is the empty one
    for (const auto& state : scaling_states(config)) {
      Result r = measure_scaling(url, state, config.scaled(ten_step_workflows));
      compare_to_raw_queue(r, raw_jobs_per_s);
      if (empty_steps_per_s) {
        compare_to_empty(r, *empty_steps_per_s);
      } else {
        empty_steps_per_s = r["steps_per_s"].get<double>();
      }
      report(std::move(r));
    }
  }
  if (config.wants("replay")) report(measure_replay(url, config.scaled(replay_short_runs)));
  print_table(results);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "worker") {
      // How WorkerProcesses starts engines: serve the benchmark definitions until SIGTERM.
      return durable::test::serve_until_stopped(engine_options(durable::testing::database_url(), args[1]),
                                                register_definitions, "durable-bench");
    }
    return run_benchmarks(parse_args(args));
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}\nusage: durable-bench [--scale F] [--only {}]\n", e.what(),
               fmt::join(measurement_names, "|"));
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "durable-bench failed: {}\n", e.what());
    return 1;
  }
}
