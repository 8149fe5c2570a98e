// The `--json` documents of the CLI: the public API's structs as JSON, times as ISO-8601 UTC.
#pragma once

#include <durable/durable.hpp>

#include "console/statuses.hpp"

namespace durable::cli {

Json to_json(const RunSummary& run);
Json to_json(const RunInfo& run);
Json to_json(const HistoryEvent& event);
Json to_json(const ActivityAttempt& attempt);
Json to_json(const ScheduleInfo& schedule);
Json to_json(const QueueInfo& queue);
Json to_json(const QueueKeyInfo& key);
Json to_json(const Stats& stats);
Json to_json(const AuditEntry& entry);

using console::all_statuses;  // shared with the console (console/statuses.hpp)
using console::counts_json;
using console::parse_status;

}  // namespace durable::cli
