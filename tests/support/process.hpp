// Starting and killing worker processes for crash and multi-process tests.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace durable::test {

// Starts the test worker binary with `args`, passing the database URL down explicitly.
inline pid_t spawn_worker(const std::string& url, const std::vector<std::string>& args) {
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setenv("DURABLE_DATABASE_URL", url.c_str(), 1);
    std::vector<char*> argv;
    std::string program = DURABLE_TEST_WORKER;
    argv.push_back(program.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for the process; returns its exit code, or 128 + signal.
inline int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace durable::test
