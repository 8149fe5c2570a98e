// durable-postgres: run a command against a throwaway PostgreSQL cluster.
//
//   durable-postgres [--] COMMAND [ARGS...]
//
// Starts a private cluster (see durable::testing::TemporaryPostgres), exports its libpq conninfo
// as DURABLE_DATABASE_URL, runs COMMAND, then stops the cluster and exits with COMMAND's status.
#include <durable/testing.hpp>

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

namespace {

constexpr const char* kUsage =
    "usage: durable-postgres [--] COMMAND [ARGS...]\n"
    "\n"
    "Starts a throwaway PostgreSQL cluster reachable only on a unix socket in a temporary folder,\n"
    "runs COMMAND with DURABLE_DATABASE_URL set to its libpq conninfo, then stops the cluster,\n"
    "removes the folder and exits with COMMAND's exit code (128+N if it died of signal N).\n"
    "PGHOST, PGPORT, PGDATABASE and PGUSER are set too, so `durable-postgres psql` works.\n"
    "If DURABLE_DATABASE_URL is already set, COMMAND just runs against that database.\n"
    "SIGINT, SIGTERM and SIGHUP sent to durable-postgres are passed on to COMMAND.\n"
    "\n"
    "environment:\n"
    "  DURABLE_DATABASE_URL  use this database instead of starting one\n"
    "  DURABLE_PG_BIN        folder with initdb and pg_ctl (default: newest /usr/lib/postgresql/*/bin)\n"
    "  TMPDIR                where the cluster's folder is made (default: /tmp)\n";

[[noreturn]] void exec_command(char** command) {
  ::execvp(command[0], command);
  const int error = errno;
  std::fprintf(stderr, "durable-postgres: cannot run %s: %s\n", command[0], std::strerror(error));
  ::_exit(error == ENOENT ? 127 : 126);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Runs the command and returns its exit code. The signals we forward stay blocked here from
// before the fork until we exit, so none is lost and none kills us before the cluster is stopped.
int run_and_wait(char** command) {
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&forwarded, sig);
  sigset_t previous;
  ::sigprocmask(SIG_BLOCK, &forwarded, &previous);

  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("durable-postgres: fork");
    return 1;
  }
  if (child == 0) {
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    exec_command(command);
  }

  int status = 0;
  for (;;) {
    siginfo_t info{};
    const int sig = ::sigwaitinfo(&forwarded, &info);
    if (sig < 0) continue;  // EINTR
    if (sig == SIGCHLD) {
      const pid_t done = ::waitpid(child, &status, WNOHANG);
      if (done == child) break;
      continue;
    }
    // A terminal's Ctrl-C or hangup already reached the child, which shares our process group.
    if (info.si_code != SI_KERNEL) ::kill(child, sig);
  }
  return exit_code_of(status);
}

// Also PGHOST and friends, so plain libpq programs (`durable-postgres psql`) reach the cluster.
void export_libpq_defaults(std::string_view url) {
  constexpr std::pair<std::string_view, const char*> kNames[] = {
      {"host", "PGHOST"}, {"port", "PGPORT"}, {"dbname", "PGDATABASE"}, {"user", "PGUSER"}};
  while (!url.empty()) {
    const auto space = url.find(' ');
    const std::string_view item = url.substr(0, space);
    url = space == std::string_view::npos ? std::string_view{} : url.substr(space + 1);
    const auto equals = item.find('=');
    for (const auto& [key, variable] : kNames) {
      if (equals != std::string_view::npos && item.substr(0, equals) == key) {
        ::setenv(variable, std::string(item.substr(equals + 1)).c_str(), 1);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int first = 1;
  if (first < argc) {
    const std::string_view arg = argv[first];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--") ++first;
  }
  if (first >= argc) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  char** command = argv + first;

  if (const char* url = std::getenv("DURABLE_DATABASE_URL"); url != nullptr && *url != '\0') {
    exec_command(command);
  }

  try {
    durable::testing::TemporaryPostgres cluster;
    if (::setenv("DURABLE_DATABASE_URL", cluster.url().c_str(), 1) != 0) {
      std::perror("durable-postgres: setenv");
      return 1;
    }
    export_libpq_defaults(cluster.url());
    return run_and_wait(command);  // the cluster's destructor then stops it and removes its folder
  } catch (const std::exception& e) {
    std::fprintf(stderr, "durable-postgres: %s\n", e.what());
    return 1;
  }
}
