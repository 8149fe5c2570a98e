// The tool's exit codes, and how an error a verb throws becomes one, said on stderr in one line.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace durable::cli {

enum Exit { ok = 0, not_found = 1, usage = 2, database = 3, other = 4 };

// A verb's own "not found" (a run id of another workflow, a schema behind this build).
struct NotFound : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One line: libpq's messages span several, each a sentence of its own; other control bytes escaped.
std::string one_line(const std::string& text);

// Prints "durable: <what it says>" to stderr and returns the exit code of `error`.
int exit_code_of(const std::exception_ptr& error);

}  // namespace durable::cli
