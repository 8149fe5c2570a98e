// Connection failures that no retry mends: a server that refuses this client for good (its
// certificate, its pg_hba.conf, a role or database that is not there). An engine fails at its
// start with what to change, instead of retrying for `unavailable_after`.
#pragma once

#include <optional>
#include <string>

#include "durable/errors.hpp"

namespace durable::pg {

// DatabaseRefused saying what to change when libpq's `message` (a failed connection attempt) is
// one of those; none for a server that is down, starting, restarting or full (worth retrying).
std::optional<DatabaseRefused> refused_for_good(const std::string& message);

}  // namespace durable::pg
