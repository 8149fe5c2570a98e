#include "statuses.hpp"

#include <fmt/format.h>

#include <durable/errors.hpp>

namespace durable::console {

const std::vector<WorkflowStatus>& all_statuses() {
  static const std::vector<WorkflowStatus> statuses{WorkflowStatus::running, WorkflowStatus::completed,
                                                    WorkflowStatus::failed, WorkflowStatus::cancelled,
                                                    WorkflowStatus::continued};
  return statuses;
}

WorkflowStatus parse_status(const std::string& text) {
  for (const auto status : all_statuses()) {
    if (to_string(status) == text) return status;
  }
  throw InvalidArgument(
      fmt::format("unknown status '{}': use running, completed, failed, cancelled or continued", text));
}

Json counts_json(const std::map<WorkflowStatus, std::int64_t>& counts) {
  Json out = Json::object();
  for (const auto status : all_statuses()) {
    const auto it = counts.find(status);
    out[std::string(to_string(status))] = it == counts.end() ? 0 : it->second;
  }
  return out;
}

}  // namespace durable::console
