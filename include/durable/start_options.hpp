// How a run is started: by Engine::start_workflow (StartOptions) or by a parent workflow as its
// child (ChildOptions), and what an id that already has a run means for the new one.
#pragma once

namespace durable {

// What starting a workflow under an id that already has a run does.
enum class IdReusePolicy {
  reject_duplicate,  // default: any earlier run, whatever its status, blocks the id
  allow_if_failed,   // a new run only when the earlier run failed or was cancelled
  allow_if_ended,    // a new run when the earlier run has ended, completed included
};

struct StartOptions {
  IdReusePolicy id_reuse = IdReusePolicy::reject_duplicate;
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
