// Random (version 4) UUIDs for run ids and WorkflowContext::uuid().
#pragma once

#include <string>

namespace durable::detail {
std::string random_uuid();
}
