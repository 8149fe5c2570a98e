// The options an activity task runs with, resolved option by option: the call site's, then the
// activity's declared ones, then the defaults. Internal: users set ActivityOptions only.
#pragma once

#include <optional>
#include <string>

#include "durable/options.hpp"
#include "durable/queue_records.hpp"

namespace durable::detail {

struct ResolvedActivityOptions {
  RetryPolicy retry;
  Duration timeout = default_activity_timeout;
  std::optional<std::string> idempotency_key;
  std::string queue = default_queue;  // the call's, else the declared one's
  int priority = 0;
  std::optional<std::string> concurrency_key;  // none: its run's
};

ResolvedActivityOptions resolve(const ActivityOptions& call_site, const ActivityOptions& declared);

// Throws InvalidOptions naming the field, the value and the rule it breaks, and
// InvalidIdempotencyKey for an empty or oversized key.
void validate(const ResolvedActivityOptions& options, const std::string& activity_name);

}  // namespace durable::detail
