// WorkflowStatus: the state a workflow run is in, as handles, lists and stats report it.
#pragma once

#include <string_view>

namespace durable {

// `continued`: the run ended with continue_as_new, and the next run of its id goes on from there.
enum class WorkflowStatus { running, completed, failed, cancelled, continued };

std::string_view to_string(WorkflowStatus status);

}  // namespace durable
