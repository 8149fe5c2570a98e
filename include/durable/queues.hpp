// Queues: flow control for workflow runs (docs/flow-control.md). A run started on a named queue
// (StartOptions::queue) waits there, queued, until an engine that serves the queue admits it;
// once admitted it runs as any run does, and holds its place in the queue's limits until it ends.
// The limits live in the schema, so every engine obeys the same ones, exactly: at no instant are
// more runs admitted than a limit allows, across engines and crashes (an admitted run's place is
// its own running row, so a dead engine leaks none). Work over a limit waits; it never fails for it.
//
// Keys (StartOptions::concurrency_key: a tenant, a customer) take turns within a queue, so a key
// with a long backlog does not hold back the others; higher priority is admitted first.
// Activities wait on named queues too (ActivityOptions::queue), under the same kinds of limits.
// A workflow type or an activity type can be paused on its own, whatever its queue.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "durable/audit.hpp"
#include "durable/queue_records.hpp"

namespace durable {

namespace detail {
class EngineCore;
}

class Queues {
 public:
  // Creates the queue, or changes its limits. Takes effect at the next admission (within a poll
  // interval): a lower limit admits nothing more until the admitted runs are under it. Throws
  // InvalidQueue for a bad name or a limit below 1, and for "default" (it has no limits).
  void define(const QueueSpec& spec);
  std::vector<QueueInfo> list() const;           // by name
  QueueInfo get(const std::string& name) const;  // throws UnknownQueue
  // The `limit` keys of the queue with the most queued runs (1 to 1000).
  std::vector<QueueKeyInfo> keys(const std::string& name, int limit = 20) const;
  // A paused queue admits nothing; its admitted runs go on, and its queued runs asked to cancel
  // still end. Audited (queue_pause, queue_resume). Throws UnknownQueue, InvalidArgument for an
  // empty reason; nothing is written then.
  void pause(const std::string& name, const OperatorAction& action);
  void resume(const std::string& name, const OperatorAction& action);

  // Pauses a workflow type on every engine: no run of it is claimed, admitted, leased at its start
  // or continued by a step's commit; a replay under way finishes, its activities run on, and runs
  // may still start (they wait). This engine holds it at once, the others as soon as they hear of
  // it (NOTIFY), within their poll interval at most. Any name may be paused, registered anywhere
  // or not. Audited (workflow_type_pause, details {"workflow": name}). Throws InvalidArgument for
  // an empty name or reason; nothing is written then.
  void pause_workflow(const std::string& name, const OperatorAction& action);
  // Its runs are claimed again at once. Audited (workflow_type_resume); false, and nothing
  // written, when it was not paused.
  bool resume_workflow(const std::string& name, const OperatorAction& action);
  // Pauses an activity type on every engine, as pause_workflow: no attempt of it starts (those
  // running finish); its calls wait, on whatever queue. Audited (activity_type_pause,
  // activity_type_resume, details {"activity": name}); as pause_workflow otherwise.
  void pause_activity(const std::string& name, const OperatorAction& action);
  bool resume_activity(const std::string& name, const OperatorAction& action);
  std::vector<PausedType> paused_types() const;  // the workflows first, each kind by name

 private:
  void pause_type(TypeKind kind, const std::string& name, const OperatorAction& action);
  bool resume_type(TypeKind kind, const std::string& name, const OperatorAction& action);
  friend class Engine;  // Engine::queues()
  friend class Runs;    // Runs::stats()
  explicit Queues(std::shared_ptr<detail::EngineCore> core);
  std::shared_ptr<detail::EngineCore> core_;
};

}  // namespace durable
