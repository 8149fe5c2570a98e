// The one tree of exception types durable throws. Catch `durable::Error` for all of them.
//
//   std::runtime_error
//   └── Error                          anything durable reports
//       ├── InvalidArgument            bad input, caught before anything is written
//       │   ├── InvalidOptions         a retry policy or timeout breaks a rule (names field, value, rule)
//       │   ├── InvalidIdempotencyKey  an activity's idempotency key is empty or too long
//       │   ├── InvalidWorkflowId      empty, too long, or contains NUL
//       │   ├── InvalidSchemaName      the schema name is not an allowed identifier
//       │   ├── UnknownWorkflow        no workflow of that name is registered
//       │   ├── UnknownActivity        no activity of that name is registered
//       │   ├── PayloadError           an input or result does not convert to/from the declared type
//       │   ├── RegistrationError      a name registered twice, or registering after start()
//       │   ├── UnknownTrigger         no trigger of that name is registered
//       │   ├── InvalidEvent           an event without a stable id
//       │   ├── InvalidTopic           a message topic or event key that is empty, too long or contains NUL
//       │   ├── InvalidPatchId         a patch (change) id that is empty, too long or contains NUL
//       │   ├── InvalidHistory         an exported history that is not JSON, of an unknown format version, or malformed
//       │   ├── InvalidCronExpression  a cron expression breaks a rule (names the field and the rule)
//       │   ├── UnknownTimeZone        a time zone the system's IANA database does not know
//       │   ├── InvalidSchedule        a schedule id, misfire policy, catch-up limit or grace breaks a rule
//       │   ├── InvalidQueue           a queue name, limit, rate, concurrency/deduplication/debounce key breaks a rule
//       │   ├── UnknownQueue           no queue of that name is defined
//       │   └── ChildDepthExceeded     start_child in a run nested max_child_depth deep already
//       ├── WorkflowAlreadyStarted     the workflow id is taken (names the existing run and status)
//       ├── DuplicateStart             a running run holds the start's deduplication key (names it)
//       ├── WorkflowNotFound           no workflow with that id
//       ├── WorkflowEnded              a message sent to a run that has ended (names its status)
//       ├── ScheduleAlreadyExists      a schedule with that id exists
//       ├── ScheduleNotFound           no schedule with that id
//       ├── NonRetryableError          thrown by an activity: fail now, skip the remaining attempts
//       │   ├── IdempotencyKeyConflict   journaled: a key reused with another input (strict engines)
//       │   └── TransactionMisuse        journaled: a transactional activity's body committed or ended its transaction
//       ├── ActivityTimeout            journaled: an attempt ran past its timeout (retried under the policy)
//       ├── LeaseExpired               journaled: an attempt's worker stopped renewing its lease (retried)
//       ├── ActivityFailed             seen inside a workflow: an activity ran out of attempts
//       ├── ChildWorkflowFailed        seen inside a workflow: a child run failed or was cancelled
//       ├── CompensationFailed         from Saga::compensate(): compensations failed for good (names each)
//       ├── NonDeterminismError        workflow code asked for something else than its journal holds
//       ├── WorkflowFailed             from result(): the run failed (carries the journaled error)
//       ├── WorkflowCancelled          in a workflow: its run is being cancelled; from result(): it was
//       ├── Timeout                    from result(): the wait ran out; the run goes on
//       ├── CodecError                 a stored value does not decode: tampered with, or no codec (names the key id)
//       │   └── UnknownCodecKey        a value encoded under a key id the codec does not know (a rotation dropped it)
//       └── DatabaseError              PostgreSQL could not be reached or refused a statement (sqlstate())
//           ├── DatabaseUnavailable    connection lost, server down or restarting, after retrying: try later
//           └── DatabaseRefused        the server refused a statement (names the SQLSTATE): retrying won't help
//
// "journaled" errors are the attempt failures the engine records itself: an activity's caller
// sees them as ActivityFailed::error_type() ("durable::ActivityTimeout", ...), the names of these types.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "durable/ids.hpp"

namespace durable {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InvalidArgument : public Error {
 public:
  using Error::Error;
};
class InvalidOptions : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class InvalidIdempotencyKey : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class InvalidWorkflowId : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class InvalidSchemaName : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class UnknownWorkflow : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class UnknownActivity : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class PayloadError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class RegistrationError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class UnknownTrigger : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class InvalidEvent : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

class InvalidTopic : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class InvalidPatchId : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class InvalidHistory : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class InvalidCronExpression : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class UnknownTimeZone : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class InvalidSchedule : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// A queue name, spec, concurrency key or priority that cannot be used (durable/queues.hpp).
class InvalidQueue : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
// A queue no engine defined (Engine::add_queue, Queues::define).
class UnknownQueue : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

class ChildDepthExceeded : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

class WorkflowAlreadyStarted : public Error {
 public:
  WorkflowAlreadyStarted(WorkflowId workflow_id, RunId run_id, std::string status);
  const WorkflowId& workflow_id() const noexcept { return workflow_id_; }
  const RunId& existing_run_id() const noexcept { return run_id_; }
  const std::string& existing_status() const noexcept { return status_; }

 private:
  WorkflowId workflow_id_;
  RunId run_id_;
  std::string status_;
};

// Engine::start_workflow with StartOptions::deduplication_key while a run started with that key
// on that queue is queued or running (start_or_find returns that run instead).
class DuplicateStart : public Error {
 public:
  DuplicateStart(const std::string& deduplication_key, WorkflowId workflow_id, RunId run_id);
  const WorkflowId& existing_workflow_id() const noexcept { return workflow_id_; }
  const RunId& existing_run_id() const noexcept { return run_id_; }

 private:
  WorkflowId workflow_id_;
  RunId run_id_;
};

class WorkflowNotFound : public Error {
 public:
  explicit WorkflowNotFound(const WorkflowId& workflow_id);
  // No run with this run id (perhaps deleted or pruned).
  static WorkflowNotFound run(const RunId& run_id);

 private:
  struct Message {
    std::string text;
  };
  explicit WorkflowNotFound(const Message& message);
};

// The workflow's latest run has ended, so it takes no more messages.
class WorkflowEnded : public Error {
 public:
  WorkflowEnded(WorkflowId workflow_id, std::string status);
  const WorkflowId& workflow_id() const noexcept { return workflow_id_; }
  const std::string& status() const noexcept { return status_; }

 private:
  WorkflowId workflow_id_;
  std::string status_;
};
// A management action the run's state does not allow (resume a run that did not fail, delete
// a running run, fork onto an id whose run is running): the message says what would.
class InvalidRunState : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

class ScheduleAlreadyExists : public Error {
 public:
  explicit ScheduleAlreadyExists(const std::string& schedule_id);
};

class ScheduleNotFound : public Error {
 public:
  explicit ScheduleNotFound(const std::string& schedule_id);
};

// An activity failed for good (attempts exhausted, or a non-retryable error).
// Thrown at the call site inside a workflow; catch it to compensate.
class ActivityFailed : public Error {
 public:
  ActivityFailed(std::string activity, std::string error_type, std::string error_message, int attempts);
  const std::string& activity() const noexcept { return activity_; }
  const std::string& error_type() const noexcept { return error_type_; }
  const std::string& error_message() const noexcept { return error_message_; }
  int attempts() const noexcept { return attempts_; }

 private:
  std::string activity_, error_type_, error_message_;
  int attempts_;
};

// A child workflow failed or was cancelled. Thrown by its future's get() inside the parent;
// error_type() and error_message() are the child's journaled error ("durable::WorkflowCancelled"
// for a cancelled child).
class ChildWorkflowFailed : public Error {
 public:
  ChildWorkflowFailed(WorkflowId workflow_id, std::string workflow_name, std::string status, std::string error_type,
                      std::string error_message);
  const WorkflowId& workflow_id() const noexcept { return workflow_id_; }  // the child's
  const std::string& workflow_name() const noexcept { return workflow_name_; }
  const std::string& status() const noexcept { return status_; }  // "failed" or "cancelled"
  const std::string& error_type() const noexcept { return error_type_; }
  const std::string& error_message() const noexcept { return error_message_; }

 private:
  WorkflowId workflow_id_;
  std::string workflow_name_, status_, error_type_, error_message_;
};

// A compensation that failed for good, as Saga::compensate() saw it.
struct FailedCompensation {
  std::string activity;
  std::string error_type;  // as ActivityFailed::error_type()
  std::string error_message;
  int attempts = 0;  // 0: its call was refused (an unknown activity, invalid options), never run
};

// Saga::compensate() ran every compensation and some failed for good: failures() lists them in
// the order they ran, and what() names each (activity, error type and message), then the error
// the saga compensated for when compensate() ran while one was handled (cause()).
class CompensationFailed : public Error {
 public:
  CompensationFailed(std::vector<FailedCompensation> failures, std::size_t compensations, std::string cause = {});
  const std::vector<FailedCompensation>& failures() const noexcept { return failures_; }
  std::size_t compensations() const noexcept { return compensations_; }  // how many compensate() ran
  // The error being handled when compensate() ran, "type: message" (empty when none).
  const std::string& cause() const noexcept { return cause_; }

 private:
  std::vector<FailedCompensation> failures_;
  std::size_t compensations_;
  std::string cause_;
};

// Throw it (or a type derived from it) from an activity to end its attempts at once.
class NonRetryableError : public Error {
 public:
  using Error::Error;
};

// A key reused with another input than the one that produced its result, on an engine with
// EngineOptions::idempotency_input_mismatch_fails.
class IdempotencyKeyConflict : public NonRetryableError {
 public:
  using NonRetryableError::NonRetryableError;
};

// A transactional activity's body committed, aborted or otherwise ended the transaction it was
// given (durable/pqxx.hpp): its writes must commit with its result, so nothing of it committed,
// and the same body would do it again: not retried.
class TransactionMisuse : public NonRetryableError {
 public:
  using NonRetryableError::NonRetryableError;
};

class ActivityTimeout : public Error {
 public:
  using Error::Error;
};

class LeaseExpired : public Error {
 public:
  using Error::Error;
};

// Workflow code asked for something else than its journal holds at sequence number step(): the
// journal's call and the code's, described ("activity 'charge_card'", "a timer (sleep)", ...).
class NonDeterminismError : public Error {
 public:
  using Error::Error;  // from a stored message: step() is -1, journaled() and asked() empty
  NonDeterminismError(const std::string& message, int step, std::string journaled, std::string asked);
  int step() const noexcept { return step_; }
  const std::string& journaled() const noexcept { return journaled_; }
  const std::string& asked() const noexcept { return asked_; }

 private:
  int step_ = -1;
  std::string journaled_, asked_;
};

// The workflow run ended in failure; error_type() and what() are what the journal holds.
class WorkflowFailed : public Error {
 public:
  WorkflowFailed(WorkflowId workflow_id, std::string error_type, const std::string& error_message);
  const WorkflowId& workflow_id() const noexcept { return workflow_id_; }
  const std::string& error_type() const noexcept { return error_type_; }

 private:
  WorkflowId workflow_id_;
  std::string error_type_;
};

// Thrown inside a workflow at its current await (or next durable call) once a cancel of its run
// was requested: catch it to clean up (activities still run), then rethrow to end the run as
// cancelled. Thrown by result() of a run that ended cancelled.
class WorkflowCancelled : public Error {
 public:
  explicit WorkflowCancelled(const WorkflowId& workflow_id, std::string reason = {});
  const std::string& reason() const noexcept { return reason_; }  // as given to cancel(); may be empty

 private:
  std::string reason_;
};

class Timeout : public Error {
 public:
  using Error::Error;
};

// A stored value that the engine's PayloadCodec cannot decode, or that needs one when none is set.
class CodecError : public Error {
 public:
  using Error::Error;
};
// A stored value encoded under a key id the codec does not know (durable/codec.hpp).
class UnknownCodecKey : public CodecError {
 public:
  UnknownCodecKey(std::string key_id, const std::string& message) : CodecError(message), key_id_(std::move(key_id)) {}
  const std::string& key_id() const noexcept { return key_id_; }

 private:
  std::string key_id_;
};

class DatabaseError : public Error {
 public:
  explicit DatabaseError(const std::string& message, std::string sqlstate = {})
      : Error(message), sqlstate_(std::move(sqlstate)) {}
  // The SQLSTATE PostgreSQL answered with ("23505", "57P01", ...); empty when it gave none (no
  // connection could be made, or the error is durable's own, such as a schema newer than the build).
  const std::string& sqlstate() const noexcept { return sqlstate_; }

 private:
  std::string sqlstate_;
};
class DatabaseUnavailable : public DatabaseError {
 public:
  using DatabaseError::DatabaseError;
};
class DatabaseRefused : public DatabaseError {
 public:
  using DatabaseError::DatabaseError;
};

}  // namespace durable
