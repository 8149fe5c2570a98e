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
// `detached`: the child also writes its standard output there (nothing it or its own children
// leave running holds the test's output open, which ctest waits on) and leads a process group of
// its own, so that kill(-pid, ...) ends it with every process it started.
// Everything the child needs is built before fork(): the parent has threads (engines), and a
// child that allocates can deadlock on a lock one of them held at the fork.
inline pid_t spawn_program(const std::string& program, const std::string& url, const std::vector<std::string>& args,
                           const std::vector<std::string>& env = {}, const std::string& stderr_path = {},
                           bool detached = false) {
  std::vector<std::string> vars{"DURABLE_DATABASE_URL=" + url};
  vars.insert(vars.end(), env.begin(), env.end());
  const auto overridden = [&](const std::string& entry) {
    for (const auto& v : vars) {
      const auto eq = v.find('=');
      if (entry.compare(0, eq + 1, v, 0, eq + 1) == 0) return true;
    }
    return false;
  };
  std::vector<std::string> environment;
  for (char** e = environ; *e; ++e) {
    if (!overridden(*e)) environment.emplace_back(*e);
  }
  environment.insert(environment.end(), vars.begin(), vars.end());
  std::vector<char*> envp;
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string path = program;
  std::vector<std::string> copy = args;
  std::vector<char*> argv{path.data()};
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {  // only async-signal-safe calls from here
    if (!stderr_path.empty()) {
      const int fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) dup2(fd, 2);
      if (fd >= 0 && detached) dup2(fd, 1);
    }
    if (detached) setpgid(0, 0);
    execve(path.c_str(), argv.data(), envp.data());
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
