// The options an activity task runs with, resolved option by option: the call site's, then the
// activity's declared ones, then the defaults. Internal: users set ActivityOptions only.
#pragma once

#include <optional>
#include <string>

#include "durable/options.hpp"

namespace durable::detail {

struct ResolvedActivityOptions {
  RetryPolicy retry;
  Duration timeout = default_activity_timeout;
  std::optional<std::string> idempotency_key;
};

ResolvedActivityOptions resolve(const ActivityOptions& call_site, const ActivityOptions& declared);

// Throws InvalidOptions naming the field, the value and the rule it breaks, and
// InvalidIdempotencyKey for an empty or oversized key.
void validate(const ResolvedActivityOptions& options, const std::string& activity_name);

}  // namespace durable::detail
