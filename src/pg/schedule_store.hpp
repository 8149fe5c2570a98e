// The schedules table: its rows, and the one transaction that fires due schedules.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/sealer.hpp"
#include "durable/schedule.hpp"
namespace durable::pg {

class ConnectionPool;

struct ScheduleRow {
  std::string id;
  ScheduleSpec spec;
  bool paused = false;
  std::int64_t next_fire_us = 0, prev_fire_us = 0;
  std::int64_t fires_started = 0, fires_dropped = 0;
};

// What firing one due schedule does: the runs to start and where the schedule moves to.
struct ScheduledStart {
  std::string workflow_id, run_id;
  Json context;  // {"schedule": {...}}, journaled with the run's start
};
struct ScheduleAdvance {
  std::vector<ScheduledStart> starts;
  std::int64_t next_fire_us = 0, prev_fire_us = 0;
  std::int64_t dropped = 0;
};

class ScheduleStore {
 public:
  // `app_version`: the engine's, recorded on the runs its fires start. `sealer`: encodes the
  // schedules' inputs (a fire starts its run with the input as stored, encoded or not).
  explicit ScheduleStore(ConnectionPool& pool, std::string app_version = {}, detail::Sealer sealer = {});

  std::int64_t db_now_us();
  // False when the id is taken by another schedule (a retried create of our own counts as done).
  bool create(const ScheduleRow& row, const std::string& revision);
  bool update(const ScheduleRow& row, const std::string& revision);  // false: no such schedule
  // false: no such schedule. With an action, its audit entry goes in the same transaction.
  bool set_paused(const std::string& id, bool paused, const OperatorAction* action = nullptr);
  bool remove(const std::string& id, const OperatorAction* action = nullptr);
  std::vector<ScheduleRow> read(const std::optional<std::string>& id);

  // Locks up to `limit` due schedules (SKIP LOCKED: engines share the work), asks `plan` what
  // each fire does given the database time, starts those runs (reject-duplicate) and advances
  // the schedule, all in one transaction. Returns how many schedules it handled and runs it started.
  struct Fired {
    int schedules = 0;
    int runs_started = 0;
  };
  Fired fire_due(int limit, const std::function<ScheduleAdvance(const ScheduleRow& row, std::int64_t now_us)>& plan);
  // Microseconds until the earliest active schedule is due; nullopt when none is active.
  std::optional<std::int64_t> next_due_in_us();

 private:
  // Runs create_schedule or update_schedule; returns the rows written. `revision_before` gets
  // the revision the row had before (create only).
  int write(const char* statement, const ScheduleRow& row, const std::string& revision, std::string* revision_before);
  ConnectionPool& pool_;
  const std::string app_version_;
  const detail::Sealer seal_;
  std::string schedules_channel_, workflows_channel_;
};

}  // namespace durable::pg
