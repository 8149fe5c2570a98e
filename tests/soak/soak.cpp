// The soak (docs/reliability.md#the-soak; scripts/soak.sh runs it for an hour, the test suite for
// two minutes):
//   durable_soak [SECONDS [RATE]]
// runs a worker process (durable_test_worker: an engine serving the test definitions) on a fresh
// schema of $DURABLE_DATABASE_URL, and for SECONDS (default 3600) offers it RATE runs a second
// (default 10; tests/soak/load.hpp says which), an every-minute schedule, and a prune of runs that
// ended over a minute ago every few minutes. Every interval it samples the worker's memory (VmRSS),
// the connections it holds and the runs completed; at the end it prints the samples' verdict and
// a `SOAK {...}` JSON line, and exits 1 when a check failed.
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <thread>

#include "soak/load.hpp"
#include "soak/verdict.hpp"
#include "support/process.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

namespace durable::soak {

namespace {

using namespace std::chrono_literals;

struct Size {
  int duration_s = 3600;
  double rate = 10;  // runs started a second
  int interval_s = 10;
  int warmup_s = 600;
  int prune_every_s = 180;
};

// The hour's sizes; a run shorter than 20 minutes samples every 5 s and warms up for its first
// third (40 s of the test suite's two minutes).
Size size_of(int duration_s, double rate) {
  Size s{.duration_s = duration_s, .rate = rate};
  if (duration_s < 1200) {
    s.interval_s = 5;
    s.warmup_s = duration_s / 3 / s.interval_s * s.interval_s;
    s.prune_every_s = 30;
  }
  return s;
}

constexpr auto prune_older_than = 60s;
constexpr const char* schedule_id = "soak-every-minute";
const OperatorAction prune_action{.actor = "soak", .reason = "the soak prunes runs that ended over a minute ago"};

// The worker process, killed if the soak ends before it stopped it.
struct Worker {
  pid_t pid = -1;
  std::string log;
  ~Worker() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      test::wait_for(pid);
    }
    std::error_code ignored;
    std::filesystem::remove(log, ignored);
  }
  // Its exit code when it has exited, else -1.
  int exited() {
    int status = 0;
    if (pid <= 0 || waitpid(pid, &status, WNOHANG) != pid) return -1;
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string output() const {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
};

void start_worker(Worker& w, const test::TestDb& db) {
  w.log = (std::filesystem::temp_directory_path() / fmt::format("durable-soak-{}.log", getpid())).string();
  w.pid = test::spawn_program(DURABLE_TEST_WORKER, db.url(), {db.schema(), "serve"}, {}, w.log, true);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (w.output().find("ready") == std::string::npos) {
    if (w.exited() >= 0 || std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("the worker did not start:\n" + w.output());
    }
    std::this_thread::sleep_for(50ms);
  }
}

std::int64_t rss_kb_of(pid_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return 0;
}

// The sessions the worker's engine holds, by the application_name it gives them, and how many of
// them it opened since the last look (by the database's clock).
class Connections {
 public:
  explicit Connections(const test::TestDb& db)
      : url_(db.url()), name_(fmt::format("durable/{}/worker-serve", db.schema())) {}
  void look(Sample& s) {
    if (!conn_ || !conn_->is_open()) conn_ = std::make_unique<pqxx::connection>(url_);
    pqxx::nontransaction tx(*conn_);
    const auto row = tx.exec_params1(
        "SELECT count(*), count(*) FILTER (WHERE backend_start > $2::timestamptz), now()::text "
        "FROM pg_stat_activity WHERE application_name = $1",
        name_, last_look_);
    s.connections = row[0].as<int>();
    s.opened = row[1].as<int>();
    last_look_ = row[2].as<std::string>();
  }

 private:
  std::string url_, name_;
  std::string last_look_ = "-infinity";
  std::unique_ptr<pqxx::connection> conn_;
};

// The schedule's runs, each read once when it has ended: completed with its result, or not.
void read_schedule_runs(Engine& client, std::set<RunId>& seen, Outcome& o) {
  RunQuery query{.filter = {.statuses = {WorkflowStatus::completed, WorkflowStatus::failed, WorkflowStatus::cancelled},
                            .schedule_id = schedule_id},
                 .limit = 1000};
  for (const auto& run : client.runs().list(query).runs) {
    if (!seen.insert(run.run_id).second) continue;
    const Json result = client.runs().get(run.run_id).result;
    if (run.status == WorkflowStatus::completed && result == Json("hello, schedule")) {
      ++o.schedule_fires;
    } else {
      ++o.schedule_failed;
      o.failures.push_back(fmt::format("{}: {}, {}", run.workflow_id.str(), to_string(run.status), result.dump()));
    }
  }
}

Sample sample_of(double at_s, pid_t worker, Connections& connections, const Load::Counts& now,
                 const Load::Counts& before) {
  Sample s{.at_s = at_s, .rss_kb = rss_kb_of(worker)};
  connections.look(s);
  s.completed = now.completed - before.completed;
  s.in_flight = now.started - now.completed - now.failed;
  if (s.completed > 0) s.latency_ms = static_cast<double>(now.latency_ms - before.latency_ms) / s.completed;
  return s;
}

void print_sample(const Sample& s) {
  fmt::print(
      "soak {:>6.0f} s  VmRSS {:>7} kB  connections {:>2} ({} new)  completed {:>4}  in flight {:>4}  latency {:>6.0f} "
      "ms\n",
      s.at_s, s.rss_kb, s.connections, s.opened, s.completed, s.in_flight, s.latency_ms);
  std::fflush(stdout);
}

// The load's duration: a sample every interval, the schedule's runs read, a prune when due.
std::vector<Sample> run_samples(Engine& client, Load& load, Worker& worker, const Size& size, Outcome& o,
                                std::set<RunId>& schedule_runs, Connections& connections) {
  std::vector<Sample> samples;
  const auto begin = std::chrono::steady_clock::now();
  Load::Counts before{};
  for (int at = size.interval_s; at <= size.duration_s; at += size.interval_s) {
    std::this_thread::sleep_until(begin + std::chrono::seconds{at});
    if (const int code = worker.exited(); code >= 0) {
      o.worker_exit = code;
      fmt::print("soak: the worker exited with {} at {} s\n", code, at);
      break;
    }
    const Load::Counts now = load.counts();
    samples.push_back(sample_of(at, worker.pid, connections, now, before));
    print_sample(samples.back());
    before = now;
    read_schedule_runs(client, schedule_runs, o);
    if (at % size.prune_every_s == 0) {
      const auto pruned = client.runs().prune(std::chrono::system_clock::now() - prune_older_than, prune_action);
      o.pruned += pruned.runs;
      ++o.prunes;
    }
  }
  return samples;
}

void report(const Size& size, const Limits& limits, const Verdict& v) {
  Json line = v.figures;
  line["duration_s"] = size.duration_s;
  line["rate_per_s"] = size.rate;
  line["interval_s"] = size.interval_s;
  line["max_growth"] = limits.max_growth;
  line["max_connections"] = limits.max_connections;
  line["max_drift"] = limits.max_drift;
  fmt::print("SOAK {}\n", line.dump());
  if (v.ok()) {
    fmt::print("soak: ok\n");
  } else {
    for (const auto& f : v.failed) fmt::print("soak: FAILED: {}\n", f);
  }
  std::fflush(stdout);
}

int soak(const Size& size) {
  test::TestDb db;
  EngineOptions options = db.options();
  options.instance = "soak-driver";
  Engine client(options);  // not started: it starts runs, sends, reads and prunes
  test::register_all(client);
  client.schedules().create(schedule_id,
                            {.workflow = test::HelloWorkflow::name, .input = "schedule", .cron = "* * * * *"});
  Worker worker;
  start_worker(worker, db);
  fmt::print(
      "soak: {} s at {} runs/s, a sample every {} s, warm-up {} s, a prune every {} s; worker pid {}, schema {}\n",
      size.duration_s, size.rate, size.interval_s, size.warmup_s, size.prune_every_s, worker.pid, db.schema());
  Outcome o;
  std::set<RunId> schedule_runs;
  Connections connections(db);
  std::vector<Sample> samples;
  {
    Load load(client, size.rate, "soak-");
    samples = run_samples(client, load, worker, size, o, schedule_runs, connections);
    load.stop_starting();
    if (!load.drain(60s)) fmt::print("soak: runs still running a minute after the load stopped\n");
    const Load::Counts c = load.counts();
    o.started = c.started;
    o.completed = c.completed;
    o.failed = c.failed;
    for (const auto& f : load.failures()) o.failures.push_back(f);
  }
  if (worker.pid > 0) {
    kill(worker.pid, SIGTERM);
    o.worker_exit = test::wait_for(worker.pid);
    worker.pid = -1;
  }
  read_schedule_runs(client, schedule_runs, o);
  const Limits limits{.warmup_s = static_cast<double>(size.warmup_s),
                      .max_connections = EngineOptions{}.connection_pool_size + 1,  // the worker's pool, and LISTEN
                      .min_schedule_fires = std::max(0, size.duration_s / 60 - 1)};
  const Verdict v = judge(samples, limits, o);
  report(size, limits, v);
  if (!v.ok()) fmt::print("soak: the worker's output:\n{}", worker.output());
  return v.ok() ? 0 : 1;
}

}  // namespace

}  // namespace durable::soak

int main(int argc, char** argv) {
  if (argc > 3) {
    std::fprintf(stderr, "usage: %s [SECONDS [RATE]]\n", argv[0]);
    return 2;
  }
  try {
    const int duration_s = argc > 1 ? std::stoi(argv[1]) : 3600;
    const double rate = argc > 2 ? std::stod(argv[2]) : durable::soak::Size{}.rate;
    if (duration_s < 30 || rate <= 0) throw std::invalid_argument("SECONDS must be 30 or more and RATE above 0");
    return durable::soak::soak(durable::soak::size_of(duration_s, rate));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "soak failed: %s\n", e.what());
    return 1;
  }
}
