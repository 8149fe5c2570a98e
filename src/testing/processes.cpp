#include "testing/processes.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

namespace durable::testing::processes {
namespace {

// Can `who` walk down to `dir`? (As root we hand the folder to another user, who must reach it.)
bool reachable_by(const fs::path& dir, const Identity& who) {
  for (fs::path p = dir;; p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return false;
    const mode_t bit = st.st_uid == who.uid ? S_IXUSR : st.st_gid == who.gid ? S_IXGRP : S_IXOTH;
    if ((st.st_mode & bit) == 0) return false;
    if (p == p.parent_path()) return true;
  }
}

// Between fork and exec only async-signal-safe calls: the parent may have other threads.
[[noreturn]] void child_fail(const char* what) {
  const char* reason = ::strerrordesc_np(errno);  // unlike strerror, async-signal-safe
  if (reason == nullptr) reason = "unknown error";
  (void)!::write(STDERR_FILENO, "durable::testing: ", 18);
  (void)!::write(STDERR_FILENO, what, std::strlen(what));
  (void)!::write(STDERR_FILENO, ": ", 2);
  (void)!::write(STDERR_FILENO, reason, std::strlen(reason));
  (void)!::write(STDERR_FILENO, "\n", 1);
  ::_exit(127);
}

void move_fd(int from, int to) {
  if (from == to) {
    if (::fcntl(to, F_SETFD, 0) != 0) child_fail("fcntl");
  } else if (::dup2(from, to) < 0) {
    child_fail("dup2");
  }
}

}  // namespace

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), "durable::testing: " + what);
}

std::optional<Identity> identity_to_run_as(const std::string& user) {
  if (::geteuid() != 0) return std::nullopt;
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  const int rc = ::getpwnam_r(user.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (rc != 0 || found == nullptr) {
    throw std::runtime_error(
        fmt::format("durable::testing: running as root, but user '{}' (Options::run_as_user) to run PostgreSQL and "
                    "PgBouncer as was not found",
                    user));
  }
  if (found->pw_uid == 0) {
    throw std::runtime_error(fmt::format(
        "durable::testing: Options::run_as_user '{}' is root; PostgreSQL and PgBouncer refuse to run as root", user));
  }
  return Identity{found->pw_uid, found->pw_gid};
}

// The socket path must fit in sockaddr_un (107 bytes) and the folder name is pasted into
// pg_ctl's -o, which goes through a shell: fall back to /tmp for long or unusual $TMPDIR.
fs::path temp_base(const std::optional<Identity>& run_as) {
  const char* env = std::getenv("TMPDIR");
  if (env == nullptr || *env == '\0') return "/tmp";
  const std::string base = fs::path(env).lexically_normal().string();
  const bool plain = std::all_of(base.begin(), base.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || std::strchr("/._-+", c) != nullptr;
  });
  if (!plain || base.size() > 70 || base.front() != '/') return "/tmp";
  if (run_as && !reachable_by(base, *run_as)) return "/tmp";
  return base;
}

void chown_recursive(const fs::path& root, const Identity& owner) {
  if (::lchown(root.c_str(), owner.uid, owner.gid) != 0) throw_errno("chown " + root.string());
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (::lchown(entry.path().c_str(), owner.uid, owner.gid) != 0) throw_errno("chown " + entry.path().string());
  }
}

std::string join_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    if (!arg.empty() && arg.find_first_of(" \t'\"\\$*?;&|<>()") == std::string::npos) {
      out += arg;
      continue;
    }
    out += '\'';
    for (const char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return fmt::format("wait status {}", status);
}

std::string tail_of(const fs::path& file, std::size_t lines) {
  std::ifstream in(file);
  if (!in) return "(no log)";
  std::vector<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(std::move(line));
    if (last.size() > lines) last.erase(last.begin());
  }
  std::string out;
  for (const auto& line : last) out += line + '\n';
  return out.empty() ? "(log is empty)" : out;
}

Fd open_or_throw(const fs::path& file, int flags) {
  Fd fd(::open(file.c_str(), flags | O_CLOEXEC, 0600));
  if (fd.get() < 0) throw_errno("open " + file.string());
  return fd;
}

pid_t spawn(const SpawnSpec& spec) {
  std::vector<char*> argv;
  argv.reserve(spec.argv.size() + 1);
  for (const auto& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const char* cwd = spec.cwd.c_str();

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid > 0) return pid;

  // Child.
  move_fd(spec.output_fd, STDERR_FILENO);  // first, so failures below are logged
  move_fd(spec.output_fd, STDOUT_FILENO);
  move_fd(spec.stdin_fd, STDIN_FILENO);
  if (::close_range(3, ~0U, 0) != 0) {
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD}) {
    const bool deaf = spec.detach && sig != SIGPIPE && sig != SIGCHLD;
    ::signal(sig, deaf ? SIG_IGN : SIG_DFL);
  }
  if (spec.detach && ::setsid() < 0) child_fail("setsid");
  if (spec.run_as) {
    if (::setgroups(0, nullptr) != 0) child_fail("setgroups");
    if (::setgid(spec.run_as->gid) != 0) child_fail("setgid");
    if (::setuid(spec.run_as->uid) != 0) child_fail("setuid");
  }
  // After setuid, which clears it; and the parent may have died before it took effect.
  if (spec.die_with_parent && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)) {
    child_fail("parent gone");
  }
  if (::chdir(cwd) != 0) child_fail("chdir");
  ::execv(argv[0], argv.data());
  child_fail(argv[0]);
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw_errno("waitpid");
  }
  return status;
}

int free_loopback_port() {
  const Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) throw_errno("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), size) != 0) throw_errno("bind 127.0.0.1:0");
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &size) != 0) throw_errno("getsockname");
  return ntohs(address.sin_port);
}

}  // namespace durable::testing::processes
