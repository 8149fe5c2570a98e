// The queues table, and the admission that moves queued runs of a queue into its limits
// (docs/flow-control.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/sealer.hpp"
#include "durable/audit.hpp"
#include "durable/queue_records.hpp"

namespace durable::pg {

class ConnectionPool;

struct QueueRow {
  QueueSpec spec;
  bool paused = false;
  std::optional<std::int64_t> paused_at_us;
  std::string paused_by, paused_reason;
  std::int64_t queued = 0, running = 0, key_throttled = 0;
  std::optional<std::int64_t> oldest_queued_us;
  std::int64_t activities_waiting = 0, activities_running = 0;
  std::int64_t now_us = 0;
};

struct PausedTypeRow {
  std::string kind;  // "workflow" or "activity"
  std::string name;
  std::int64_t paused_at_us = 0;
  std::string paused_by, paused_reason;
};

struct PausedNames {
  std::vector<std::string> workflows, activities;
};

struct QueueKeyRow {
  std::string key;
  std::int64_t queued = 0, running = 0;
  std::optional<std::int64_t> oldest_queued_us;
  std::int64_t now_us = 0;  // the database's time of the reading
};

class QueueStore {
 public:
  // `sealer` encodes the operators' reasons it writes (EngineOptions::codec).
  QueueStore(ConnectionPool& pool, detail::Sealer sealer);

  // Creates the queue or sets its limits, under its admission lock. True when that changed anything.
  bool define(const QueueSpec& spec);
  // false: no such queue. The action's audit entry goes in the same transaction.
  bool set_paused(const std::string& name, bool paused, const OperatorAction& action);
  std::vector<QueueRow> read(const std::string& name = {});  // '': all of them
  std::vector<QueueKeyRow> keys(const std::string& name, int limit);
  std::vector<std::string> names_of_defined(const std::vector<std::string>& names);
  // Pauses or resumes a workflow or activity type (`kind` "workflow" or "activity"), with its
  // audit entry in the same transaction. False: a resume found it not paused (nothing written).
  bool set_type_paused(const std::string& kind, const std::string& name, bool paused, const OperatorAction& action);
  std::vector<PausedTypeRow> paused_types();
  PausedNames paused_names();  // the names alone, for the engines' copies (base/paused_types.hpp)

  struct Admission {
    int admitted = 0;                  // queued runs now admitted
    int cancelled = 0;                 // queued runs asked to cancel, now ended
    std::optional<Duration> retry_in;  // when a full rate window frees a place
    bool short_of_lines = false;       // fewer lines had a run to admit than there was room for
  };
  // Admits up to `limit` queued runs of queue `name` and of these workflow names (json array)
  // within its limits, in one transaction under its admission lock (which waits for another
  // engine's admission of the same queue). The lines of the runs it admitted or cancelled that
  // have none queued left are retired in the same transaction; with `sweep`, every empty line of
  // the queue when the admission came up short of lines (a run ended while queued some other way
  // leaves its line empty: the walk skips it until then).
  Admission admit(const std::string& name, const std::string& names_json, int limit, bool sweep);

 private:
  ConnectionPool& pool_;
  detail::Sealer seal_;
  const std::string workflows_channel_, ended_channel_, tasks_channel_, paused_channel_;
};

}  // namespace durable::pg
