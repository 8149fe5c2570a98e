// EngineAccess: what src/ builds and reads of the public classes that their users may not: the
// handles the engine and Runs hand out (their constructor takes the engine's core), and an
// engine's registry, which the test kit's replay checks replay histories with.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "base/registry.hpp"
#include "durable/engine.hpp"
#include "durable/handle.hpp"
#include "engine/engine_core.hpp"

namespace durable::detail {

struct EngineAccess {
  // The ids as src/ holds them (text), typed here.
  static UntypedWorkflowHandle handle(std::shared_ptr<EngineCore> core, std::string workflow_id, std::string run_id) {
    return UntypedWorkflowHandle(std::move(core), WorkflowId{std::move(workflow_id)}, RunId{std::move(run_id)});
  }
  static const Registry& registry(const Engine& engine) { return engine.core_->registry(); }
};

}  // namespace durable::detail
