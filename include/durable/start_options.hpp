// How a run is started: by Engine::start_workflow (StartOptions) or by a parent workflow as its
// child (ChildOptions), and what an id that already has a run means for the new one.
#pragma once

#include <string>

#include "durable/options.hpp"

namespace durable {

// What starting a workflow under an id that already has a run does.
enum class IdReusePolicy {
  reject_duplicate,  // default: any earlier run, whatever its status, blocks the id
  allow_if_failed,   // a new run only when the earlier run failed or was cancelled
  allow_if_ended,    // a new run when the earlier run has ended, completed included
};

// Which start's input a debounced run runs with (StartOptions::debounce_key).
enum class DebounceInput { last, first };

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
  // While a run started with this key on the same queue is queued or running, a start with it
  // starts nothing: start_workflow throws DuplicateStart, start_or_find returns that run. At most
  // 255 bytes of UTF-8; empty: none.
  std::string deduplication_key{};
  // On a named queue: starts of the same workflow with this key collapse into one queued run,
  // admitted once `debounce` passed without another such start. The run keeps the first start's
  // workflow id; start_workflow returns it, start_or_find with started = false. At most 255
  // bytes of UTF-8; empty: none. Needs `debounce` > 0.
  std::string debounce_key{};
  Duration debounce{0};
  DebounceInput debounce_input = DebounceInput::last;
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
