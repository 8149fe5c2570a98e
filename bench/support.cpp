// The helpers every measurement shares (see support.hpp).
#include "support.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <durable/testing.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string_view>

namespace bench {

using namespace std::chrono_literals;

std::string processes_text(int processes) {
  return fmt::format("{} engine process{}", processes, processes == 1 ? "" : "es");
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double percentile(const std::vector<double>& sorted, double p) {
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

ScratchSchema::ScratchSchema(std::string url) : url_(std::move(url)), name_(durable::testing::unique_schema("bench")) {}

ScratchSchema::~ScratchSchema() {
  try {
    durable::testing::drop_schema(url_, name_);
  } catch (const std::exception& e) {
    fmt::print(stderr, "[bench] could not drop schema {}: {}\n", name_, e.what());
  }
}

std::string in_schema(const std::string& sql, const std::string& schema) {
  return fmt::format(fmt::runtime(sql), fmt::arg("s", schema));
}

void load_by_sql(const std::string& url, const std::string& schema, const std::vector<std::string>& statements,
                 const std::string& label) {
  pqxx::connection conn(url);
  auto start = Clock::now();
  {
    pqxx::work tx(conn);
    for (std::size_t i = 0; i < statements.size(); ++i) {
      const auto rows = tx.exec(statements[i]).affected_rows();
      progress("{}: statement {}/{} inserted {} rows, {:.1f} s so far", label, i + 1, statements.size(), rows,
               seconds_since(start));
    }
    tx.commit();
  }
  progress("{}: inserted in {:.1f} s", label, seconds_since(start));
  start = Clock::now();
  pqxx::nontransaction tx(conn);  // VACUUM and CHECKPOINT cannot run inside a transaction
  tx.exec0(in_schema("VACUUM ANALYZE {s}.workflows, {s}.journal, {s}.tasks, {s}.attempts", schema));
  progress("{}: vacuumed and analyzed in {:.1f} s", label, seconds_since(start));
  start = Clock::now();
  try {
    tx.exec0("CHECKPOINT");
  } catch (const pqxx::sql_error& e) {  // needs superuser or pg_checkpoint: run without it
    progress("{}: no CHECKPOINT after loading ({})", label, e.what());
  }
  progress("{}: checkpointed in {:.1f} s", label, seconds_since(start));
}

namespace {

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

}  // namespace

WorkerProcesses::WorkerProcesses(const std::string& url, const std::string& schema, int count) {
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

void WorkerProcesses::spawn(const std::string& url, const std::string& schema) {
  // Everything execve needs is built before fork: the child only calls async-signal-safe functions.
  std::vector<std::string> args = {"durable-bench", "worker", schema};
  std::vector<std::string> env = {"DURABLE_DATABASE_URL=" + url};  // so a throwaway cluster is shared
  for (char** e = environ; *e; ++e) {
    if (std::string_view(*e).rfind("DURABLE_DATABASE_URL=", 0) != 0) env.emplace_back(*e);
  }
  auto pointers = [](std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
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

void WorkerProcesses::stop() {
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

}  // namespace bench
