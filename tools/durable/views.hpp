// The `--json` documents of the CLI: the public API's structs as JSON, times as ISO-8601 UTC.
#pragma once

#include <durable/durable.hpp>

namespace durable::cli {

Json to_json(const RunSummary& run);
Json to_json(const RunInfo& run);
Json to_json(const HistoryEvent& event);
Json to_json(const ActivityAttempt& attempt);
Json to_json(const ScheduleInfo& schedule);
Json to_json(const Stats& stats);
Json to_json(const AuditEntry& entry);
Json counts_json(const std::map<WorkflowStatus, std::int64_t>& counts);  // every status, 0 for none

// Every status, in the order lists show them.
const std::vector<WorkflowStatus>& all_statuses();
// "failed" -> WorkflowStatus::failed; throws InvalidArgument naming the statuses.
WorkflowStatus parse_status(const std::string& text);

}  // namespace durable::cli
