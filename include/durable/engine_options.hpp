// The values of an Engine (durable/engine.hpp): its options, each default on the field, a start's outcome, an event.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "durable/codec.hpp"
#include "durable/detail/payload.hpp"
#include "durable/options.hpp"
#include "durable/versioning.hpp"

namespace durable {

template <typename R>
class WorkflowHandle;  // durable/handle.hpp; a StartOutcome is used where that is included

struct EngineOptions {
  std::string database_url{};         // libpq URI or conninfo; empty: $DURABLE_DATABASE_URL
  std::string schema = "durable";     // all tables live here; [a-z_][a-z0-9_]{0,47}
  std::string instance = "default";   // engine instance name: [A-Za-z0-9_.-], at most 63 characters
  int activity_max_concurrency = 10;  // activity slots of an instance, unless listed below
  // Activity slots per named instance, overriding activity_max_concurrency for that name; one
  // options value can so configure every instance of a process.
  std::map<std::string, int> instance_activity_concurrency{};
  int workflow_max_concurrency = 4;  // workflow replays at once in this engine
  // The queues whose runs this engine admits and runs, and whose activity tasks it runs
  // (durable/queues.hpp), besides those it adds with Engine::add_queue. Leave "default" out for a
  // dedicated pool that runs only named queues: it runs no default-queue run or activity then.
  std::vector<std::string> queues{"default"};
  // This engine's own bound on a named queue's activity attempts: at most N of them run in it at
  // once (each holds its place until its outcome commits), whatever the queue's limits for all
  // engines leave. Per queue name; a queue not listed is bounded by the activity slots alone.
  std::map<std::string, int> queue_activity_concurrency{};
  int connection_pool_size = 8;                        // Postgres connections shared by runners, claims and completions
  Duration poll_interval = std::chrono::seconds{1};    // fallback when no NOTIFY arrives
  Duration workflow_lease = std::chrono::seconds{30};  // how long one replay may hold a workflow
  Duration lease_margin = std::chrono::seconds{5};     // an activity's lease is its timeout plus this
  Duration shutdown_grace = std::chrono::seconds{10};  // stop(): how long running activities may finish
  // An idempotency key reused with another input: false logs a warning and reuses the result;
  // true fails the activity (durable::IdempotencyKeyConflict, not retried).
  bool idempotency_input_mismatch_fails = false;
  // > 0: ended runs are deleted with their history once they ended longer ago than this, by
  // whichever started engine takes the turn (Runs::prune, audited as this engine). 0: kept until
  // pruned or deleted through Engine::runs().
  Duration retention{0};
  // This build's version of the workflow code (say "2026-12-02.1" or a git hash): recorded on the
  // runs it starts and replays, filterable in Engine::runs(). Engines of another version try the
  // runs this one blocked at once (docs/versioning.md). Empty: unversioned.
  std::string app_version{};
  // Workflow code that no longer replays a run's journal: block the run (default) until a fixed
  // build or an operator takes it on, or fail it for good.
  OnNondeterminism on_nondeterminism = OnNondeterminism::block;
  // Connections go through a pooler in transaction mode (PgBouncer's pool_mode = transaction), where
  // each transaction may run on another server connection: the engine keeps no session state
  // (statements run unprepared, no session SET, no LISTEN on database_url). An engine that finds
  // itself behind a pooler without it refuses to start (InvalidOptions). docs/operations.md.
  bool pooler_mode = false;
  // With pooler_mode: a URL straight to PostgreSQL, on which one connection LISTENs for wake-ups.
  // Empty: nothing listens, and the engine finds new work by polling every poll_interval.
  std::string listen_url{};
  // The engine's first connection migrates the schema (under a lock on its version table). false: it only
  // checks that the schema is at this build's version and throws DatabaseError otherwise, for
  // deployments that migrate first (durable/schema.hpp, `durable migrate`).
  bool migrate_schema = true;
  // How long database work retries a lost connection or a restarting server before it throws
  // DatabaseUnavailable (the engine's own loops then try again later). Tools that answer a person
  // use a few seconds.
  Duration database_unavailable_after = std::chrono::seconds{60};
  // Encodes every stored value that came from a user (durable/codec.hpp). nullptr (default): stored
  // as plain JSON. Values written before it was set stay readable; keep old keys in it after a rotation.
  std::shared_ptr<const PayloadCodec> codec{};
};

// The answer of Engine::start_or_find: the run under the id, and whether this call started it.
template <typename R = Json>
struct StartOutcome {
  WorkflowHandle<R> run;
  bool started = false;
};

// An event delivered to a trigger. Its id must be stable across redeliveries: it makes the
// workflow id `{trigger}:{event_id}`, so a redelivered event starts nothing new.
struct Event {
  std::string event_id{};
  Json payload{};  // the workflow's input
};

}  // namespace durable
