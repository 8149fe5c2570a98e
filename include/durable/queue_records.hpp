// The values of flow control (durable/queues.hpp): a named queue's limits and what it holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "durable/options.hpp"
#include "durable/run_records.hpp"

namespace durable {

// A queue's name: 1 to 63 characters of [A-Za-z0-9_.:-]. "default" is the default queue.
inline constexpr const char* default_queue = "default";
inline constexpr std::size_t max_concurrency_key_bytes = 255;
inline constexpr int max_key_weight = 100;  // QueueSpec::key_weights

// At most `count` admissions in any `period`: a sliding window on the database clock. Runs over
// the rate wait, queued, until the window has room again. On a queue that activities name, the
// same limit counts their attempts started, apart from the runs admitted.
struct RateLimit {
  int count = 0;      // at least 1
  Duration period{};  // more than 0, at most a year
};

// A named queue's limits. Unset: no limit of that kind; a limit must be at least 1. Runs started
// on the queue and activity attempts on it (ActivityOptions::queue) are counted apart: a limit of
// 5 allows 5 runs admitted and 5 attempts running. An attempt's key is its call's
// ActivityOptions::concurrency_key, else its run's StartOptions::concurrency_key.
struct QueueSpec {
  std::string name;
  std::optional<int> concurrency{};      // admitted runs (apart: running attempts) at once, all engines
  std::optional<int> key_concurrency{};  // the same per concurrency key
  std::optional<RateLimit> rate{};       // admissions (apart: attempts started), all engines together
  std::optional<RateLimit> key_rate{};   // the same per concurrency key
  // Keys that take more than one turn in each round ("gold" -> 3: three runs, or attempts, where
  // a key without a weight has one), 1 to 100; a key not listed has weight 1.
  std::map<std::string, int> key_weights{};
  // Priority aging: queued work's priority rises by one for every `priority_aging` it has waited
  // (a run since it was started or its debounce window passed, an activity task since it came
  // due), up to the highest priority waiting on the queue, where it takes its turn with the work
  // there; so no low priority waits forever behind a stream of higher. Unset: priorities never
  // change. Over 0, at most a year.
  std::optional<Duration> priority_aging{};
};

// A queue as the database shows it now.
struct QueueInfo {
  QueueSpec spec;
  bool paused = false;
  std::optional<TimePoint> paused_at{};
  std::string paused_by, paused_reason;
  std::int64_t queued = 0;              // waiting for admission
  std::int64_t running = 0;             // admitted and not ended
  std::int64_t throttled = 0;           // queued behind a concurrency limit: the queue's when full, else their key's
  double oldest_queued_seconds = 0;     // how long the oldest queued run has waited (0: none)
  std::int64_t activities_waiting = 0;  // activity tasks on the queue due to run, waiting for a place
  std::int64_t activities_running = 0;  // activity attempts on the queue running now
};

// A workflow or activity type an operator paused (Queues::pause_workflow, Queues::pause_activity).
enum class TypeKind { workflow, activity };
struct PausedType {
  TypeKind kind = TypeKind::workflow;
  std::string name;
  TimePoint paused_at{};
  std::string paused_by, paused_reason;
};

// One concurrency key of a queue ("" for the runs started without one).
struct QueueKeyInfo {
  std::string key;
  std::int64_t queued = 0, running = 0;
  double oldest_queued_seconds = 0;
};

}  // namespace durable
