#include "base/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace durable::detail {

namespace {
template <typename Map>
std::vector<std::string> names_of(const Map& map) {
  std::vector<std::string> names;
  names.reserve(map.size());
  for (const auto& [name, def] : map) names.push_back(name);
  return names;
}
template <typename Map>
std::string listed(const Map& map) {
  std::vector<std::string> names;
  names.reserve(map.size());
  for (const auto& [name, def] : map) names.push_back("'" + name + "'");
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}
}  // namespace

const ActivityDefinition& Registry::activity(const std::string& name) const {
  auto it = activities.find(name);
  if (it == activities.end()) {
    throw UnknownActivity(
        fmt::format("no activity named '{}' is registered on this engine (registered: {}); "
                    "register it with Engine::add before start()",
                    name, listed(activities)));
  }
  return it->second;
}

const WorkflowDefinition& Registry::workflow(const std::string& name) const {
  auto it = workflows.find(name);
  if (it == workflows.end()) {
    throw UnknownWorkflow(
        fmt::format("no workflow named '{}' is registered on this engine (registered: {}); "
                    "register it with Engine::add",
                    name, listed(workflows)));
  }
  return it->second;
}

std::vector<std::string> Registry::activity_names() const { return names_of(activities); }
std::vector<std::string> Registry::workflow_names() const { return names_of(workflows); }
std::string Registry::activity_names_json() const { return Json(activity_names()).dump(); }
std::string Registry::workflow_names_json() const { return Json(workflow_names()).dump(); }

}  // namespace durable::detail
