// durable-bench: throughput, idle latency and replay cost of durable against a real PostgreSQL.
//
//   durable-bench [--scale F] [--only throughput|latency|replay]
//
// The database is durable::testing::database_url(): $DURABLE_DATABASE_URL, or a throwaway
// cluster. Every measurement works in a fresh schema and drops it afterwards. Results go to
// stdout as one JSON line per measurement, then a table; progress goes to stderr.
//
// The throughput runs re-execute this program as `durable-bench worker SCHEMA`: an engine
// process that serves the benchmark definitions until SIGTERM.
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
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
    throw std::runtime_error(fmt::format("a {}-step run returned {}, expected {}", steps, sum, steps * (steps - 1) / 2));
  }
}

// Starts a chain run and waits for its result.
void run_chain(durable::Engine& engine, const std::string& id, int steps) {
  check_sum(engine.start_workflow<NoopChain>(id, steps).result(result_timeout), steps);
}

// ---- Shared helpers: timing, percentiles, schemas, worker processes ------------------------

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
        if (line != "ready") throw std::runtime_error(fmt::format("worker {} did not get ready (said '{}')", w.pid, line));
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

// `durable-bench worker SCHEMA`: serve the benchmark definitions until SIGTERM.
int run_worker(const std::string& schema) {
  // Blocked before the engine starts, so every engine thread inherits the mask and only
  // sigwait below sees the signal; the Engine destructor then stops the engine cleanly.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  durable::Engine engine(engine_options(durable::testing::database_url(), schema));
  register_definitions(engine);
  engine.start();
  std::printf("ready\n");
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  return 0;
}

// ---- The measurements ------------------------------------------------------------------------

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

// A client engine sees runs end in other processes by polling (every 100 ms), which bounds
// how late the last result is noticed.
void wait_for_all(const std::vector<ChainHandle>& runs, int steps) {
  for (const auto& run : runs) check_sum(run.result(result_timeout), steps);
}

// `workflows` runs of `steps` steps, served by `processes` worker processes; this process is only
// a client (its engine is never started), so 1 and 3 processes are measured the same way.
Result measure_throughput(const std::string& url, int steps, int processes, int workflows) {
  progress("throughput: {} x {}-step workflows on {} engine process(es)", workflows, steps, processes);
  ScratchSchema schema(url);
  WorkerProcesses workers(url, schema.name(), processes);
  durable::Engine client(engine_options(url, schema.name()));
  register_definitions(client);  // start_workflow checks the input against the registered type

  // Untimed warm-up: connections opened and statements prepared in the client and the workers.
  wait_for_all(start_runs(client, "warm-up", 2 * processes, steps), steps);

  const auto start = Clock::now();
  const auto runs = start_runs(client, "run", workflows, steps);
  const double start_seconds = seconds_since(start);  // shows whether starting was the bottleneck
  wait_for_all(runs, steps);
  const double seconds = seconds_since(start);

  return {{"bench", "throughput"},
          {"steps", steps},
          {"processes", processes},
          {"workflows", workflows},
          {"seconds", seconds},
          {"start_seconds", start_seconds},
          {"workflows_per_s", workflows / seconds},
          {"steps_per_s", workflows * steps / seconds}};
}

// Start-to-result time of 1-step runs, one at a time, on an otherwise idle in-process engine.
Result measure_latency(const std::string& url, int runs) {
  progress("latency: {} sequential 1-step workflows on an idle engine", runs);
  ScratchSchema schema(url);
  durable::Engine engine(engine_options(url, schema.name()));
  register_definitions(engine);
  engine.start();
  for (int i = 0; i < 5; ++i) run_chain(engine, fmt::format("warm-up-{}", i), 1);

  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    run_chain(engine, fmt::format("run-{}", i), 1);
    ms.push_back(seconds_since(start) * 1000.0);
  }
  std::sort(ms.begin(), ms.end());
  const double p50 = percentile(ms, 50);
  return {{"bench", "latency"},
          {"steps", 1},
          {"runs", runs},
          {"p50_ms", p50},
          {"p99_ms", percentile(ms, 99)},
          {"mean_ms", std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size())},
          {"max_ms", ms.back()},
          {"aim_p50_ms", 20},
          {"aim_met", p50 < 20.0}};
}

// Per-step time of one long sequential run against short ones. Each step replays the
// workflow from the top, so this shows whether replay cost grows with the journal.
Result measure_replay(const std::string& url, int short_runs) {
  constexpr int short_steps = 10;
  constexpr int long_steps = 1000;
  progress("replay: {} x {}-step workflows, then one {}-step workflow", short_runs, short_steps, long_steps);
  ScratchSchema schema(url);
  durable::Engine engine(engine_options(url, schema.name()));
  register_definitions(engine);
  engine.start();
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
          {"aim_ratio", 1.5},
          {"aim_met", ratio <= 1.5}};
}

// ---- Command line and report -------------------------------------------------------------------

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

struct Config {
  double scale = 1.0;  // multiplies every workflow count (not the 1000 steps of the long run)
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
      if (config.only != "throughput" && config.only != "latency" && config.only != "replay") {
        throw UsageError("--only takes throughput, latency or replay");
      }
    } else {
      throw UsageError(fmt::format("unknown argument '{}'", args[i]));
    }
  }
  return config;
}

const char* verdict(const Result& result) { return result["aim_met"].get<bool>() ? "met" : "NOT met"; }

void print_table(const std::vector<Result>& results) {
  const bool any_throughput =
      std::any_of(results.begin(), results.end(), [](const Result& r) { return r["bench"] == "throughput"; });
  if (any_throughput) {
    fmt::print("\n{:<11} {:>5} {:>9} {:>9} {:>8} {:>11} {:>8}\n", "measurement", "steps", "processes", "workflows",
               "seconds", "workflows/s", "steps/s");
  }
  for (const auto& r : results) {
    if (r["bench"] != "throughput") continue;
    fmt::print("{:<11} {:>5} {:>9} {:>9} {:>8.2f} {:>11.1f} {:>8.1f}\n", "throughput", r["steps"].get<int>(),
               r["processes"].get<int>(), r["workflows"].get<int>(), r["seconds"].get<double>(),
               r["workflows_per_s"].get<double>(), r["steps_per_s"].get<double>());
  }
  for (const auto& r : results) {
    if (r["bench"] == "latency") {
      fmt::print("\nidle latency, 1-step workflow, {} runs: p50 {:.1f} ms, p99 {:.1f} ms, mean {:.1f} ms, max {:.1f} ms\n"
                 "  aim p50 < 20 ms: {}\n",
                 r["runs"].get<int>(), r["p50_ms"].get<double>(), r["p99_ms"].get<double>(),
                 r["mean_ms"].get<double>(), r["max_ms"].get<double>(), verdict(r));
    } else if (r["bench"] == "replay") {
      fmt::print("\nreplay cost: {}-step runs {:.2f} ms/step ({} runs), {}-step run {:.2f} ms/step ({:.1f} s)\n"
                 "  ratio {:.2f}, aim <= 1.5: {}\n",
                 r["short_steps"].get<int>(), r["short_ms_per_step"].get<double>(), r["short_runs"].get<int>(),
                 r["long_steps"].get<int>(), r["long_ms_per_step"].get<double>(), r["long_seconds"].get<double>(),
                 r["ratio"].get<double>(), verdict(r));
    }
  }
}

int run_benchmarks(const Config& config) {
  const std::string& url = durable::testing::database_url();
  std::vector<Result> results;
  auto report = [&](Result result) {
    fmt::print("{}\n", result.dump());
    std::fflush(stdout);
    results.push_back(std::move(result));
  };
  if (config.wants("throughput")) {
    for (const auto& [steps, workflows] : {std::pair{1, 500}, std::pair{10, 200}}) {
      for (int processes : {1, 3}) report(measure_throughput(url, steps, processes, config.scaled(workflows)));
    }
  }
  if (config.wants("latency")) report(measure_latency(url, config.scaled(200)));
  if (config.wants("replay")) report(measure_replay(url, config.scaled(20)));
  print_table(results);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "worker") return run_worker(args[1]);
    return run_benchmarks(parse_args(args));
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}\nusage: durable-bench [--scale F] [--only throughput|latency|replay]\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "durable-bench failed: {}\n", e.what());
    return 1;
  }
}
