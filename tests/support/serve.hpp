// The main of a worker process, written once for the tests' workers and the benchmark's:
// an engine that serves its definitions until SIGTERM.
#pragma once

#include <durable/durable.hpp>

#include <functional>

namespace durable::test {

// Blocks SIGTERM and SIGINT in every thread (call it before any thread starts), builds an engine
// from `options`, lets `register_definitions` register on it, starts it and prints "ready" on
// stdout; then waits for SIGTERM or SIGINT and returns 0 once the engine has stopped. On an
// exception prints "<program_name> failed: <what>" on stderr and returns 1.
// `once_started`, when given, runs on the started engine before "ready" is printed.
int serve_until_stopped(const EngineOptions& options, const std::function<void(Engine&)>& register_definitions,
                        const char* program_name, const std::function<void(Engine&)>& once_started = {});

}  // namespace durable::test
