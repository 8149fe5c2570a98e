// The audit trail: who changed what, when and why. Every operator action (Runs' resume, fork,
// cancel, terminate, delete and prune; Schedules' audited pause, resume and remove) takes an
// OperatorAction and writes its entry in the action's own transaction; Runs::audit reads them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "durable/detail/payload.hpp"
#include "durable/ids.hpp"

namespace durable {

// Who acts, and why: recorded in the audit trail. The reason must not be empty.
struct OperatorAction {
  std::string actor;
  std::string reason;
};

struct AuditEntry {
  std::int64_t id = 0;
  std::chrono::system_clock::time_point at{};
  // `action`: resume, fork, cancel, terminate, delete, prune, expire_idempotency_results,
  // schedule_pause, schedule_resume or schedule_delete (details: the schedule_id), queue_pause or
  // queue_resume (details: the queue), workflow_type_pause or workflow_type_resume (details: the
  // workflow), activity_type_pause or activity_type_resume (details: the activity).
  std::string actor, action, reason;
  WorkflowId workflow_id;
  RunId run_id;
  Json details;
};

struct AuditQuery {
  int limit = 100;                       // 1 to 1000, newest first
  std::optional<std::int64_t> before{};  // entries older than this id (the last id of the page before)
};

}  // namespace durable
