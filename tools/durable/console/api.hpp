// The console's JSON API: what each /api/... request reads or does, through the public
// management API only (Engine::runs(), Engine::schedules(), Engine::queues()). Transport and security live in
// console.cpp and the files it names; these functions throw durable's errors, which answers.cpp
// maps to HTTP statuses.
#pragma once

#include <durable/engine.hpp>
#include <map>
#include <string>

namespace durable::console::detail {

// Query parameters, as cpp-httplib's Params (std::multimap) hold them.
using Params = std::multimap<std::string, std::string>;

// GET /api/runs: a page of runs. Params: status (comma-separated), name, prefix, blocked=1,
// cursor, limit.
Json runs_page(Runs& runs, const Params& params);
// GET /api/counts: runs per status under the same filter (status ignored).
Json run_counts(Runs& runs, const Params& params);
// GET /api/run?id=RUN_ID: one run in full, with its children (the first 100).
Json run(Runs& runs, const RunId& run_id);
// GET /api/history?id=RUN_ID&from_seq=N: a page of its journal and the attempts of its activities.
Json history(Runs& runs, const Params& params);
// GET /api/schedules
Json schedules(Schedules& schedules);
// GET /api/overview: counts by status, blocked runs, schedules, named queues, runs created per
// hour over the last 24 hours by status, and from Runs::stats the oldest running run, the activity
// and workflow queues and the engines with their load.
Json overview(Runs& runs, Schedules& schedules);
// GET /api/queues: the named queues by name, with their limits, pause and counts; each in the
// fields of `durable queues list --json`, times in milliseconds as everywhere in the console.
Json queues(Queues& queues);
// GET /api/queues/NAME: one queue, with "keys": its keys with the most queued runs (up to 20).
Json queue(Queues& queues, const std::string& name);
// POST /api/actions/{cancel,resume,fork,terminate}, body {"run_id", "reason"[, "from_step",
// "workflow_id"]}: does it as `actor` and says what happened.
Json act(Runs& runs, const std::string& verb, const Json& body, const std::string& actor);
// POST /api/actions/{pause-queue,resume-queue}, body {"queue", "reason"}: does it as `actor` and
// says what the queue is now: {"queue", "paused"}.
Json act_on_queue(Queues& queues, const std::string& verb, const Json& body, const std::string& actor);

}  // namespace durable::console::detail
