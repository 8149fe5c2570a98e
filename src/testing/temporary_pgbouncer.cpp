// TemporaryPgBouncer: a PgBouncer in front of a PostgreSQL server, for tests behind a pooler.
#include <fcntl.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "durable/testing.hpp"
#include "testing/processes.hpp"

namespace durable::testing {
namespace {

namespace fs = std::filesystem;

// The server URL's keywords (host, port, dbname, user) with libpq's defaults for those it leaves out.
std::map<std::string, std::string> server_of(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (options == nullptr) {
    const std::string reason = error != nullptr ? error : "out of memory";
    PQfreemem(error);
    throw std::invalid_argument("durable::testing::TemporaryPgBouncer: the server URL does not parse: " + reason);
  }
  std::map<std::string, std::string> values{{"host", "/var/run/postgresql"}, {"port", "5432"}};
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val != nullptr) values[o->keyword] = o->val;
  }
  PQconninfoFree(options);
  if (!values.contains("user")) values["user"] = "postgres";
  if (!values.contains("dbname")) values["dbname"] = values["user"];
  return values;
}

}  // namespace

struct TemporaryPgBouncer::State {
  fs::path dir;
  std::string url;
  pid_t pid = -1;
  pid_t owner = ::getpid();

  fs::path log() const { return dir / "log"; }

  void wait_until_accepting() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
    while (PQping(url.c_str()) != PQPING_OK) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        throw std::runtime_error(fmt::format("durable::testing: pgbouncer exited ({}); it said:\n{}{}",
                                             processes::describe_status(status), processes::tail_of(dir / "output"),
                                             processes::tail_of(log())));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error(fmt::format("durable::testing: pgbouncer accepted no connection in 20 s; {}:\n{}",
                                             log().string(), processes::tail_of(log())));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
  }

  ~State() {
    if (::getpid() != owner) return;
    if (pid > 0) {
      ::kill(pid, SIGKILL);  // a throwaway: no shutdown that could wait for clients
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
};

TemporaryPgBouncer::TemporaryPgBouncer(const std::string& server_url) : TemporaryPgBouncer(server_url, Options{}) {}

TemporaryPgBouncer::TemporaryPgBouncer(const std::string& server_url, Options options)
    : state_(std::make_unique<State>()) {
  State& s = *state_;  // on a throw below, ~State stops and removes whatever was made
  const fs::path program = "/usr/sbin/pgbouncer";
  if (::access(program.c_str(), X_OK) != 0) {
    throw std::runtime_error(
        "durable::testing: /usr/sbin/pgbouncer not found: run scripts/setup.sh (apt install pgbouncer)");
  }
  const auto server = server_of(server_url);
  const auto run_as = processes::identity_to_run_as(options.run_as_user);
  std::string pattern = (processes::temp_base(run_as) / "durable-pgbouncer-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) processes::throw_errno("mkdtemp " + pattern);
  s.dir = pattern;
  const int port = processes::free_loopback_port();
  // Trusting listed users is PgBouncer's nearest to the test cluster's own trust.
  std::ofstream(s.dir / "users.txt") << fmt::format("\"{}\" \"\"\n", server.at("user"));
  for (const auto& user : options.users)
    std::ofstream(s.dir / "users.txt", std::ios::app) << fmt::format("\"{}\" \"\"\n", user);
  std::ofstream(s.dir / "pgbouncer.ini") << fmt::format(
      "[databases]\n"
      "* = host={} port={}{}\n"
      "[pgbouncer]\n"
      "listen_addr = 127.0.0.1\n"
      "listen_port = {}\n"
      "unix_socket_dir =\n"
      "auth_type = trust\n"
      "auth_file = {}\n"
      "pool_mode = {}\n"
      "default_pool_size = {}\n"
      "max_client_conn = 1000\n"
      "logfile = {}\n",
      server.at("host"), server.at("port"),
      options.connect_query.empty() ? "" : fmt::format(" connect_query='{}'", options.connect_query), port,
      (s.dir / "users.txt").string(), options.pool_mode, options.server_connections, s.log().string());
  processes::open_or_throw(s.log(), O_WRONLY | O_CREAT);
  if (run_as) processes::chown_recursive(s.dir, *run_as);
  s.url = fmt::format("host=127.0.0.1 port={} dbname={} user={}", port, server.at("dbname"), server.at("user"));
  const processes::Fd dev_null = processes::open_or_throw("/dev/null", O_RDWR);
  const processes::Fd output = processes::open_or_throw(s.dir / "output", O_WRONLY | O_CREAT);
  s.pid = processes::spawn({.argv = {program.string(), (s.dir / "pgbouncer.ini").string()},
                            .run_as = run_as,
                            .stdin_fd = dev_null.get(),
                            .output_fd = output.get(),
                            .cwd = s.dir,
                            .die_with_parent = true});
  s.wait_until_accepting();
}

TemporaryPgBouncer::~TemporaryPgBouncer() = default;

const std::string& TemporaryPgBouncer::url() const { return state_->url; }

}  // namespace durable::testing
