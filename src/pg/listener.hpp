// LISTEN for durable's wake-up channels on a connection of its own, until told to stop.
#pragma once

#include <functional>

#include "pg/connection_pool.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

// Calls `heard(kind, payload)` for each notification. On every (re)connect it calls it once for every
// kind, since anything may have happened while nobody listened; polling in the claim loops
// covers notifications lost meanwhile. Returns when `stopping()` is true (checked every 200 ms).
void listen(const ConnectionPool& pool, const Heard& heard, const std::function<bool()>& stopping);

}  // namespace durable::pg
