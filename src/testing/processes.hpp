// Child processes for the test kit's servers (PostgreSQL, PgBouncer): spawned as an unprivileged
// user when the caller is root (both servers refuse to run as root), in private folders.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace durable::testing::processes {

namespace fs = std::filesystem;

struct Identity {
  uid_t uid;
  gid_t gid;
};

// The user to run servers as: `user` when this process is root, nobody else's otherwise.
std::optional<Identity> identity_to_run_as(const std::string& user);

[[noreturn]] void throw_errno(const std::string& what);

// A private folder's parent: $TMPDIR when short, plain and reachable by `run_as`, else /tmp.
fs::path temp_base(const std::optional<Identity>& run_as);
void chown_recursive(const fs::path& root, const Identity& owner);

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Fd() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Fd open_or_throw(const fs::path& file, int flags);

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is an absolute path
  std::optional<Identity> run_as;
  int stdin_fd;
  int output_fd;  // stdout and stderr
  fs::path cwd;
  bool detach = false;  // own session, deaf to terminal and termination signals
  // SIGKILL when the thread that spawned it ends (the process with it, even by SIGKILL): for a
  // server nothing else stops.
  bool die_with_parent = false;
};

// Forks and execs spec.argv; returns the child's pid.
pid_t spawn(const SpawnSpec& spec);
// Waits for a child; returns its wait status.
int wait_for(pid_t pid);
std::string describe_status(int status);
// argv as a shell would read it back, for messages.
std::string join_command(const std::vector<std::string>& argv);
// The last `lines` lines of a log file, for messages.
std::string tail_of(const fs::path& file, std::size_t lines = 25);
// A TCP port on 127.0.0.1 free a moment ago (the kernel's pick), for a server to listen on.
int free_loopback_port();

}  // namespace durable::testing::processes
