// TemporaryPostgres: a private PostgreSQL cluster in a temporary folder, for tests and examples.
#include "durable/testing.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/log.hpp"
#include "testing/processes.hpp"

namespace durable::testing {
namespace {

namespace fs = std::filesystem;
using processes::chown_recursive;
using processes::describe_status;
using processes::Fd;
using processes::free_loopback_port;
using processes::Identity;
using processes::identity_to_run_as;
using processes::join_command;
using processes::open_or_throw;
using processes::spawn;
using processes::tail_of;
using processes::temp_base;
using processes::throw_errno;
using processes::wait_for;

constexpr int socket_port = 5432;  // only names the socket file; the folder is private, so no clashes

bool is_executable(const fs::path& file) { return ::access(file.c_str(), X_OK) == 0; }

fs::path find_bin_dir(const fs::path& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("DURABLE_PG_BIN"); env != nullptr && *env != '\0') return env;
  std::optional<std::pair<int, fs::path>> newest;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = entry.path().filename().string();
    int version = 0;
    const auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), version);
    if (err != std::errc{} || end != name.data() + name.size()) continue;
    const fs::path bin = entry.path() / "bin";
    if (is_executable(bin / "initdb") && (!newest || version > newest->first)) newest.emplace(version, bin);
  }
  if (newest) return newest->second;
  // Other distributions put the server programs on PATH.
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      fs::path dir{std::string(rest.substr(0, colon))};
      if (!dir.empty() && is_executable(dir / "initdb") && is_executable(dir / "pg_ctl")) return dir;
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  throw std::runtime_error(
      "durable::testing: PostgreSQL server programs (initdb, pg_ctl) not found in $DURABLE_PG_BIN, "
      "/usr/lib/postgresql/<version>/bin or PATH; run scripts/setup.sh (or install postgresql), "
      "or set DURABLE_PG_BIN, or set DURABLE_DATABASE_URL to use an existing server");
}

}  // namespace

struct TemporaryPostgres::State {
  Options options;
  fs::path bin_dir;
  std::optional<Identity> run_as;  // set when we are root
  fs::path dir;                    // mode 0700, owned by whoever runs the server
  int port = socket_port;          // names the socket; with Options::tls the TCP port too
  std::string url;
  std::string tls_url;
  pid_t owner = ::getpid();  // a forked child that exits must not tear down our cluster
  pid_t reaper = -1;
  Fd reaper_pipe;  // write end; when it closes (even in a crash) the reaper cleans up
  std::mutex mutex;
  bool running = false;

  fs::path data() const { return dir / "data"; }
  fs::path log() const { return dir / "log"; }
  std::string tool(const char* name) const { return (bin_dir / name).string(); }

  void run(const std::vector<std::string>& argv) {
    const Fd log_fd = open_or_throw(log(), O_WRONLY | O_APPEND | O_CREAT);
    const Fd dev_null = open_or_throw("/dev/null", O_RDONLY);
    const int status = wait_for(spawn({argv, run_as, dev_null.get(), log_fd.get(), dir}));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
    throw std::runtime_error(fmt::format("durable::testing: `{}` failed ({}); last lines of {}:\n{}",
                                         join_command(argv), describe_status(status), log().string(), tail_of(log())));
  }

  // Stops the server and removes the folder if this process dies without doing so itself
  // (SIGINT, SIGTERM, SIGKILL, a crash): it waits for end of file on a pipe only we hold.
  void start_reaper() {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) throw_errno("pipe");
    Fd read_end(ends[0]);
    reaper_pipe = Fd(ends[1]);
    const Fd dev_null = open_or_throw("/dev/null", O_WRONLY);
    const std::vector<std::string> argv = {
        "/bin/sh",
        "-c",
        R"(read -r line; "$1/pg_ctl" -D "$2/data" -m immediate -w stop; exec rm -rf -- "$2")",
        "durable-pg-reaper",
        bin_dir.string(),
        dir.string()};
    reaper = spawn({argv, run_as, read_end.get(), dev_null.get(), "/", true});
  }

  void start_locked() {
    if (running) return;
    std::string server_options =
        fmt::format("-c listen_addresses='{}' -c unix_socket_directories='{}' -c max_connections={} -c port={}",
                    options.tls ? "127.0.0.1" : "", dir.string(), options.max_connections, port);
    // On the command line, not in postgresql.conf: a standby copied from this server does not
    // inherit it (promoted, it would wait for a standby of its own at every commit).
    if (!options.synchronous_standby_names.empty()) {
      server_options += fmt::format(" -c synchronous_standby_names='{}'", options.synchronous_standby_names);
    }
    if (options.tls) {
      server_options += fmt::format(" -c ssl=on -c ssl_cert_file='{}' -c ssl_key_file='{}'",
                                    (dir / "tls" / "server.crt").string(), (dir / "tls" / "server.key").string());
    }
    run({tool("pg_ctl"), "-D", data().string(), "-l", log().string(), "-w", "-t", "120", "-o", server_options,
         "start"});
    running = true;
  }

  // A standby's data: a base backup of the primary's, over its socket (initdb's pg_hba.conf
  // trusts local replication), with standby.signal and primary_conninfo written (-R).
  void copy_primary(const State& primary) {
    if (primary.options.tls)
      throw std::invalid_argument("durable::testing: a standby of a TLS server is not supported");
    if (!is_executable(bin_dir / "pg_basebackup")) {
      throw std::runtime_error(
          fmt::format("durable::testing: pg_basebackup not found in {}; run scripts/setup.sh (or install postgresql)",
                      bin_dir.string()));
    }
    // The primary's folder is private to the user its server runs as: the copy runs as the same.
    if (primary.run_as.has_value() != run_as.has_value() || (run_as && primary.run_as->uid != run_as->uid)) {
      throw std::invalid_argument("durable::testing: a standby runs as its primary's user (Options::run_as_user)");
    }
    // A standby needs at least the primary's max_connections.
    options.max_connections = std::max(options.max_connections, primary.options.max_connections);
    run({tool("pg_basebackup"), "-D", data().string(), "-d",
         fmt::format("host={} port={} user=durable application_name=standby", primary.dir.string(), primary.port), "-R",
         "-X", "stream", "-c", "fast", "--no-sync"});
  }

  void stop_locked(const char* mode = "fast") {
    if (!running) return;
    run({tool("pg_ctl"), "-D", data().string(), "-m", mode, "-w", "stop"});
    running = false;
  }

  ~State() {
    if (::getpid() != owner || dir.empty()) return;
    try {
      const std::lock_guard lock(mutex);
      try {
        stop_locked();
      } catch (const std::exception& e) {
        durable::detail::logger().warn("{}", e.what());
      }
      // Also covers a server left behind by a failed or timed-out start.
      if (fs::exists(data() / "postmaster.pid")) {
        run({tool("pg_ctl"), "-D", data().string(), "-m", "immediate", "-w", "stop"});
      }
    } catch (const std::exception& e) {
      durable::detail::logger().warn("durable::testing: could not stop PostgreSQL in {}: {}", dir.string(), e.what());
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (ec) durable::detail::logger().warn("durable::testing: could not remove {}: {}", dir.string(), ec.message());
    if (reaper > 0) {
      ::kill(reaper, SIGKILL);
      int status = 0;
      while (::waitpid(reaper, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
};

TemporaryPostgres::TemporaryPostgres() : TemporaryPostgres(Options{}) {}

TemporaryPostgres::TemporaryPostgres(Options options) : state_(std::make_unique<State>()) {
  State& s = *state_;  // on a throw below, ~State stops and removes whatever was made
  s.options = std::move(options);
  s.bin_dir = find_bin_dir(s.options.bin_dir);
  for (const char* name : {"initdb", "pg_ctl", "postgres"}) {
    if (!is_executable(s.bin_dir / name)) {
      throw std::runtime_error(fmt::format(
          "durable::testing: {} not found in {}; run scripts/setup.sh (or install postgresql) or fix DURABLE_PG_BIN",
          name, s.bin_dir.string()));
    }
  }
  s.run_as = identity_to_run_as(s.options.run_as_user);

  std::string pattern = (temp_base(s.run_as) / "durable-pg-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw_errno("mkdtemp " + pattern);
  s.dir = pattern;
  if (s.options.tls) {
    s.port = free_loopback_port();
    make_test_certificates(s.dir / "tls", {"localhost"});
    s.tls_url = fmt::format(
        "host=localhost hostaddr=127.0.0.1 port={} dbname=postgres user=durable sslmode=verify-full sslrootcert={}",
        s.port, (s.dir / "tls" / "ca.crt").string());
  }
  s.url = fmt::format("host={} port={} dbname=postgres user=durable", s.dir.string(), s.port);
  open_or_throw(s.log(), O_WRONLY | O_CREAT);
  if (s.run_as) chown_recursive(s.dir, *s.run_as);
  s.start_reaper();

  if (const TemporaryPostgres* primary = s.options.standby_of) {
    s.copy_primary(*primary->state_);
  } else {
    // --no-sync only skips initdb's own flushes; the server keeps fsync on. --locale=C keeps
    // initdb independent of the caller's (possibly uninstalled) locale.
    s.run({s.tool("initdb"), "-D", s.data().string(), "-U", "durable", "--auth=trust", "-E", "UTF8", "--locale=C",
           "--no-sync"});
  }
  if (s.options.tls) {
    // TCP only with TLS; the socket as before.
    std::ofstream(s.data() / "pg_hba.conf", std::ios::trunc) << "local all all trust\n"
                                                                "hostssl all all 127.0.0.1/32 trust\n"
                                                                "hostnossl all all 127.0.0.1/32 reject\n";
    const fs::path hba = s.data() / "pg_hba.conf";
    if (s.run_as && ::chown(hba.c_str(), s.run_as->uid, s.run_as->gid) != 0) throw_errno("chown " + hba.string());
  }
  const std::lock_guard lock(s.mutex);
  s.start_locked();
  durable::detail::logger().info("started throwaway PostgreSQL in {}", s.dir.string());
}

TemporaryPostgres::~TemporaryPostgres() = default;

const std::string& TemporaryPostgres::url() const { return state_->url; }

const std::string& TemporaryPostgres::tls_url() const { return state_->tls_url; }

std::filesystem::path TemporaryPostgres::tls_ca_file() const {
  return state_->options.tls ? state_->dir / "tls" / "ca.crt" : std::filesystem::path{};
}

void TemporaryPostgres::stop(StopMode mode) {
  const std::lock_guard lock(state_->mutex);
  state_->stop_locked(mode == StopMode::immediate ? "immediate" : "fast");
}

void TemporaryPostgres::start() {
  const std::lock_guard lock(state_->mutex);
  state_->start_locked();
}

void TemporaryPostgres::restart() {
  const std::lock_guard lock(state_->mutex);
  state_->stop_locked();
  state_->start_locked();
}

void TemporaryPostgres::promote() {
  const std::lock_guard lock(state_->mutex);
  state_->run({state_->tool("pg_ctl"), "-D", state_->data().string(), "-w", "-t", "120", "promote"});
}

const std::string& database_url() {
  static const std::string url = [] {
    if (const char* env = std::getenv("DURABLE_DATABASE_URL"); env != nullptr && *env != '\0') return std::string(env);
    static TemporaryPostgres cluster;  // its destructor stops the server at normal exit
    return cluster.url();
  }();
  return url;
}

}  // namespace durable::testing
