// What a workflow does next, decided from its journal and its code alone: no I/O, no calls into
// the engine, no clock but the one given. The same journal and code decide the same, which is
// what makes a replay safe to repeat anywhere.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pg/records.hpp"
#include "base/registry.hpp"
#include "replay/inbox.hpp"
#include "replay/journal.hpp"

namespace durable::detail {

struct Decisions {
  std::vector<pg::NewEvent> events;  // to append to the journal, in order
  std::vector<pg::NewTask> tasks;    // to schedule (none once the run ended); none marked claim
  pg::RunStatus status = pg::RunStatus::running;
  Json result;                                // completed: the workflow's result
  std::string error_type, error_message;      // failed: why
  std::int64_t wake_at_us = -1;               // the earliest timer or receive deadline still to come, -1 for none
  std::vector<std::pair<int, int>> received;  // inbox messages received: [seq, step]
  // Non-empty: the code reached a receive of these topics before their inbox was read. Read it
  // and decide again; these decisions are not to be committed.
  std::set<std::string> wanted_topics;
  Json published = Json::array();  // events set, the latest per key: [key, value, step]
  bool ended() const { return status != pg::RunStatus::running; }
};

// Runs the code of `journal.name` from `registry` against the journal, with `now_us` as the
// clock for timers and now(), and `inbox` for receives. Throws UnknownWorkflow when the registry
// does not know it.
Decisions decide(const Registry& registry, const JournalCache& journal, const std::string& workflow_id,
                 std::int64_t now_us, const Inbox& inbox = Inbox::unread());

}  // namespace durable::detail
