// Starting and killing worker processes for crash and multi-process tests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace durable::test {

// Starts `program` with `args`, passing the database URL down explicitly, plus `env`
// ("NAME=value" each) for this child only.
// `stderr_path`, when given, receives the child's standard error (appended).
inline pid_t spawn_program(const std::string& program, const std::string& url, const std::vector<std::string>& args,
                           const std::vector<std::string>& env = {}, const std::string& stderr_path = {}) {
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!stderr_path.empty()) {
      const int fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) dup2(fd, 2);
    }
    setenv("DURABLE_DATABASE_URL", url.c_str(), 1);
    for (const auto& e : env) {
      const auto eq = e.find('=');
      setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
    }
    std::vector<char*> argv;
    std::string path = program;
    argv.push_back(path.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(path.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

#ifdef DURABLE_TEST_WORKER
// Starts the test worker binary with `args`.
inline pid_t spawn_worker(const std::string& url, const std::vector<std::string>& args) {
  return spawn_program(DURABLE_TEST_WORKER, url, args);
}
#endif

// Waits for the process; returns its exit code, or 128 + signal.
inline int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace durable::test
