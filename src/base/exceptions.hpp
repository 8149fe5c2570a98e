// Turns the exception in flight into the (type, message) pair that the journal stores.
#pragma once

#include <string>

namespace durable::detail {

struct ErrorInfo {
  std::string type;  // demangled, e.g. "std::runtime_error"
  std::string message;
  bool non_retryable = false;  // a durable::NonRetryableError (or derived) was thrown
};

// Call only inside a catch block.
ErrorInfo current_error();
// The journaled form of an error the engine records itself (a timeout, a lost lease, ...).
ErrorInfo error_info(const std::exception& error);

}  // namespace durable::detail
