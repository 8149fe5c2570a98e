// How a connection pool's sessions treat the schema and an unreachable server.
#pragma once

#include <chrono>
#include <string>

namespace durable::pg {

struct SessionPolicy {
  bool migrate = true;     // the first session migrates the schema; false: it checks the version only
  bool read_only = false;  // every session is read-only (and the schema is checked, never migrated)
  // Sessions go through a pooler in transaction mode (EngineOptions::pooler_mode): no session
  // state, statements run unprepared. false: a session found behind a pooler is refused.
  bool pooler = false;
  // With `pooler`: a URL straight to PostgreSQL for the one LISTEN session (EngineOptions::listen_url).
  // Empty: nothing listens, and the engine's loops poll.
  std::string listen_url{};
  // How long work retries a lost connection or a server that is restarting before it throws
  // DatabaseUnavailable.
  std::chrono::milliseconds unavailable_after{std::chrono::seconds{60}};
};

}  // namespace durable::pg
