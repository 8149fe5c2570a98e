// Workflow statuses as the operator tools (the console and the `durable` CLI) read and print them.
#pragma once

#include <cstdint>
#include <durable/handle.hpp>
#include <map>
#include <string>
#include <vector>

namespace durable::console {

// Every status, in the order lists show them.
const std::vector<WorkflowStatus>& all_statuses();
// "failed" -> WorkflowStatus::failed; throws InvalidArgument naming the statuses.
WorkflowStatus parse_status(const std::string& text);
// Every status with its count, 0 for those left out.
Json counts_json(const std::map<WorkflowStatus, std::int64_t>& counts);

}  // namespace durable::console
