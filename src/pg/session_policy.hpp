// How a connection pool's sessions treat the schema and an unreachable server.
#pragma once

#include <chrono>

namespace durable::pg {

struct SessionPolicy {
  bool migrate = true;     // the first session migrates the schema; false: it checks the version only
  bool read_only = false;  // every session is read-only (and the schema is checked, never migrated)
  // How long work retries a lost connection or a server that is restarting before it throws
  // DatabaseUnavailable.
  std::chrono::milliseconds unavailable_after{std::chrono::seconds{60}};
};

}  // namespace durable::pg
