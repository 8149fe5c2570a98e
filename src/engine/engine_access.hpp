// EngineAccess: what src/ builds and reads of the public classes that their users may not: the
// handles the engine and Runs hand out (their constructor takes the engine's core).
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "durable/handle.hpp"

namespace durable::detail {

class EngineCore;

struct EngineAccess {
  static UntypedWorkflowHandle handle(std::shared_ptr<EngineCore> core, std::string workflow_id, std::string run_id) {
    return UntypedWorkflowHandle(std::move(core), std::move(workflow_id), std::move(run_id));
  }
};

}  // namespace durable::detail
