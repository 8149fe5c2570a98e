// Where the dispatcher hands a finished attempt's outcome: it runs bodies, and whoever implements
// this commits what they did (StepFinisher in the engine, an in-memory fake in unit tests).
#pragma once

#include <optional>

#include "base/exceptions.hpp"
#include "pg/records.hpp"
#include "pipeline/activity_slots.hpp"

namespace durable::pg {
class ActivityTransaction;
}

namespace durable::detail {

// A finished attempt: its task, and what its body (or the dispatcher, for a lost lease, a timeout
// or a reused result) made of it.
struct Outcome {
  const pg::ClaimedTask& task;
  bool succeeded = false;
  const Json& result;          // when succeeded
  const ErrorInfo& error;      // when not
  bool record_attempt = true;  // false: the attempt is not counted (a lost lease's, already counted)
};

// What committing an outcome did: the step's outcome, and when its workflow continued in place,
// the slots reserved for the tasks that commit leased to this engine (step.claimed), which the
// dispatcher launches.
struct Committed {
  pg::StepOutcome step;
  std::optional<Reservation> continued;
};

class OutcomeCommitter {
 public:
  virtual ~OutcomeCommitter() = default;
  // Commits the outcome, fenced by its task's lease. `hold`: the task's hold on the slots (null
  // off its pool thread). `transaction`: a transactional activity's, which commits the step with
  // the body's writes. Throws when nothing of it committed, or the commit is in doubt.
  virtual Committed commit(const Outcome& outcome, SlotHold* hold, pg::ActivityTransaction* transaction) = 0;
};

}  // namespace durable::detail
