// The engine's view of its database: a connection pool, the stores on it and the notification
// listener, behind a header without libpqxx (only src/pg/ includes that).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "pg/activity_transaction.hpp"
#include "pg/queue_store.hpp"
#include "pg/run_store.hpp"
#include "pg/schedule_store.hpp"
#include "pg/session_policy.hpp"
#include "pg/store.hpp"

namespace durable::pg {

class ConnectionPool;

// Throws InvalidSchemaName unless `schema` matches [a-z_][a-z0-9_]{0,47}.
void validate_schema_name(const std::string& schema);

// What a NOTIFY announces; engines LISTEN on one channel per kind. Only `ended` has a payload: the
// run id of the run that ended, or none ("": some runs did; earlier versions never send one).
enum class Wake {
  workflows,  // a workflow became runnable (started, an activity finished)
  tasks,      // activity tasks were added
  ended,      // a workflow run ended
  schedules,  // a schedule was created, changed or resumed (or the test clock moved)
  events,     // a run published an event (WorkflowContext::set_event)
  paused,     // a workflow or activity type was paused or resumed (Queues::pause_workflow, ...)
};
// What a notification said: its kind and its payload.
using Heard = std::function<void(Wake, const std::string&)>;

class Database {
 public:
  // `pool_size` connections at most; `application_name` names them in pg_stat_activity;
  // `app_version` is recorded on the runs the store starts and replays.
  Database(const std::string& url, const std::string& schema, int pool_size, const std::string& application_name,
           const std::string& app_version = {}, SessionPolicy policy = {},
           const std::shared_ptr<const PayloadCodec>& codec = nullptr);
  ~Database();

  // Migrates the schema unless done already (the pool's first connection does it otherwise);
  // a started engine writes, so a standby fails it (InvalidOptions).
  void ensure_schema();
  Store& store() { return *store_; }
  ScheduleStore& schedules() { return *schedules_; }
  RunStore& runs() { return *runs_; }
  QueueStore& queues() { return *queues_; }
  TransactionConnections& transactions() { return *transactions_; }
  // Calls `heard(kind)` for each notification, on a connection of its own, until `stopping()`;
  // and once for every kind at each (re)connect, since anything may have happened unheard.
  void listen(const Heard& heard, const std::function<bool()>& stopping);

 private:
  std::unique_ptr<ConnectionPool> pool_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<ScheduleStore> schedules_;
  std::unique_ptr<RunStore> runs_;
  std::unique_ptr<QueueStore> queues_;
  std::unique_ptr<TransactionConnections> transactions_;
};

}  // namespace durable::pg
