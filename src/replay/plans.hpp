// What an operator's resume or fork of a run writes, planned from its journal alone: pure
// functions beside decide(), unit-tested like it (tests/unit/plans_test.cpp). Runs::resume and
// Runs::fork read the journal, plan, and hand the plan to storage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "durable/detail/payload.hpp"
#include "pg/records.hpp"

namespace durable::detail {

// A failed run resumed: `retry_steps` run again (their failures, or a refusal that ended the run,
// no longer count: the workflow_resumed event lists them), `reopen_steps` (activities the run had
// scheduled and never seen finish, their tasks dropped when it ended) are scheduled again.
struct ResumePlan {
  std::vector<int> retry_steps;
  std::vector<int> reopen_steps;
  int journal_length = 0;  // the resume commits only while the journal is still this long
};

// Failed activities run again when the code opened no step after their failure: whatever it did
// on seeing the failure, nothing journaled depends on it, so the replay stays consistent.
// InvalidRunState when the code went on after a failure (fork it instead).
ResumePlan plan_resume(const std::string& run_id, const std::vector<pg::JournalEvent>& events);

// A run forked from step `from_step` (0: start over; the journal's step count: after its last):
// `events` to copy ([{kind, step, name, data}], in order: the run's own start and the events of
// the steps before), and `open_steps`, the activities among those that had not finished, whose
// tasks run again as their scheduled events say. InvalidArgument for a step out of range;
// InvalidRunState for a journal that cannot be forked there (an empty one, a child before the
// step that had not ended, an open step whose input was not kept).
struct ForkPlan {
  int from_step = 0;
  Json events = Json::array();
  std::vector<int> open_steps;
};
ForkPlan plan_fork(const std::string& run_id, const std::vector<pg::JournalEvent>& events, std::int64_t from_step);

}  // namespace durable::detail
