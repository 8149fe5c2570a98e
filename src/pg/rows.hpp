// The rows our statements answer with, read into records by column name: the one place that
// knows which column holds what, so a statement may reorder or add columns freely.
#pragma once

#include <pqxx/pqxx>

#include "pg/records.hpp"
#include "pg/schedule_store.hpp"

namespace durable::pg::rows {

// A column that may be NULL, as JSON (NULL is null).
Json json_or_null(const pqxx::row& row, const char* column);

// claim_workflows, reclaim_workflows
ClaimedWorkflow claimed_workflow(const pqxx::row& row);
// claim_tasks, reclaim_tasks
ClaimedTask claimed_task(const pqxx::row& row);
// read_journal; the workflow's own columns are read by read_journal's caller.
JournalEvent journal_event(const pqxx::row& row);
// read_workflow
WorkflowRow workflow(const pqxx::row& row);
// read_schedules (listed: paused and counters) and due_schedules (due: the previous fire)
ScheduleRow listed_schedule(const pqxx::row& row);
ScheduleRow due_schedule(const pqxx::row& row);
// request_cancel's answer for run `run_id`: whether the run is asked to cancel, by this call or
// before (still running). Reads the status by a statement of its own, which sees the commit the
// request may have waited for (a continue-as-new ending the run): the request's own snapshot
// is older.
bool cancel_asked(pqxx::transaction_base& tx, const std::string& run_id, const pqxx::row& request);

}  // namespace durable::pg::rows
