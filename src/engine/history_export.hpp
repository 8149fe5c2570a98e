// Exported histories (durable/versioning.hpp: history_format): a run's journal as versioned
// JSON, written by Runs::export_history and read back by the replay checks.
#pragma once

#include <string>
#include <vector>

#include "durable/detail/payload.hpp"
#include "pg/records.hpp"
#include "pg/run_store.hpp"

namespace durable::detail {

// Run `run_id`'s history, every event; throws WorkflowNotFound when there is no such run.
Json export_history(pg::RunStore& store, const std::string& run_id);

// An exported history read back.
struct ImportedHistory {
  std::string workflow_id, run_id, workflow_name, status;
  std::vector<pg::JournalEvent> events;
  std::int64_t last_event_us = 0;  // when its last event was written
};
// Throws InvalidHistory when `history` is not an object of this format and version, or an event
// in it is malformed (names the event and what is wrong).
ImportedHistory import_history(const Json& history);

}  // namespace durable::detail
