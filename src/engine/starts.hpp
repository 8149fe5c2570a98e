// Starting a run: the one path of Engine::start_workflow, start_or_find and deliver, with the id
// reuse policy and the queue's deduplication and debounce keys.
#pragma once

#include <memory>
#include <string>

#include "durable/handle.hpp"
#include "durable/start_options.hpp"
#include "pg/records.hpp"

namespace durable::detail {

class EngineCore;

struct StartAttempt {
  UntypedWorkflowHandle run;      // the new run, or the one that took its place
  bool started = false;           // a new run
  bool duplicate = false;         // not started: a running run holds the deduplication key
  bool debounced = false;         // not started: collapsed into the queued run with the debounce key
  std::string existing_status{};  // not started
};

StartAttempt try_start(const std::shared_ptr<EngineCore>& core, const std::string& workflow_name,
                       const std::string& workflow_id, const Json& input, const StartOptions& options,
                       const pg::RunOrigin& origin = {});

}  // namespace durable::detail
