// How a run is started: by Engine::start_workflow (StartOptions) or by a parent workflow as its
// child (ChildOptions), and what an id that already has a run means for the new one.
#pragma once

#include <string>

namespace durable {

// What starting a workflow under an id that already has a run does.
enum class IdReusePolicy {
  reject_duplicate,  // default: any earlier run, whatever its status, blocks the id
  allow_if_failed,   // a new run only when the earlier run failed or was cancelled
  allow_if_ended,    // a new run when the earlier run has ended, completed included
};

struct StartOptions {
  IdReusePolicy id_reuse = IdReusePolicy::reject_duplicate;
  // Flow control (durable/queues.hpp, docs/flow-control.md). Empty or "default": the default
  // queue, which has no limits and runs the run at once. A named queue must be defined; the run
  // waits there, queued, until the queue's limits admit it.
  std::string queue{};
  // On a named queue: whose run this is (a tenant, a customer), at most 255 bytes of UTF-8. The
  // queue's key_concurrency limits the admitted runs per key, and keys take turns. Empty: no key.
  std::string concurrency_key{};
  // On a named queue: higher is admitted first; the same priority goes oldest first.
  int priority = 0;
};

// What happens to a child that is still running when its parent run ends (completed, failed or
// cancelled).
enum class ParentClosePolicy {
  cancel,   // default: the child is cancelled, and so are its own children under this policy
  abandon,  // the child runs on by itself
};

struct ChildOptions {
  ParentClosePolicy parent_close = ParentClosePolicy::cancel;
  IdReusePolicy id_reuse = IdReusePolicy::reject_duplicate;
};

// How deep children nest: a run started by Engine::start_workflow is at depth 0, its children at
// 1. A start_child in a run at this depth throws ChildDepthExceeded (a runaway recursion, most
// likely).
inline constexpr int max_child_depth = 32;

}  // namespace durable
