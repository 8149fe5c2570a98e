// The worker processes' main (see serve.hpp).
#include "support/serve.hpp"

#include <signal.h>

#include <cstdio>
#include <exception>

namespace durable::test {

int serve_until_stopped(const EngineOptions& options, const std::function<void(Engine&)>& register_definitions,
                        const char* program_name, const std::function<void(Engine&)>& once_started) {
  // Blocked before the engine starts, so every engine thread inherits the mask and only the
  // sigwait below sees the signal; the Engine destructor then stops the engine cleanly.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  try {
    Engine engine(options);
    register_definitions(engine);
    engine.start();
    if (once_started) once_started(engine);
    std::printf("ready\n");
    std::fflush(stdout);
    int signal = 0;
    sigwait(&stop_signals, &signal);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s failed: %s\n", program_name, e.what());
    return 1;
  }
  return 0;
}

}  // namespace durable::test
