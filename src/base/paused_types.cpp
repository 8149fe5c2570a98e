#include "base/paused_types.hpp"

#include <nlohmann/json.hpp>

namespace durable::detail {

namespace {

std::shared_ptr<const std::string> unpaused_json(const std::vector<std::string>& served,
                                                 const std::set<std::string, std::less<>>& paused) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& name : served) {
    if (!paused.count(name)) names.push_back(name);
  }
  return std::make_shared<const std::string>(names.dump());
}

}  // namespace

void PausedTypes::serve(std::vector<std::string> workflows, std::vector<std::string> activities) {
  std::lock_guard lock(mutex_);
  workflows_.served = std::move(workflows);
  activities_.served = std::move(activities);
  workflows_.names_json = unpaused_json(workflows_.served, workflows_.paused);
  activities_.names_json = unpaused_json(activities_.served, activities_.paused);
}

bool PausedTypes::replace(Kind& kind, std::set<std::string, std::less<>> paused) {
  if (paused == kind.paused) return false;
  kind.paused = std::move(paused);
  kind.names_json = unpaused_json(kind.served, kind.paused);
  return true;
}

void PausedTypes::update_any() { any_.store(!workflows_.paused.empty() || !activities_.paused.empty()); }

std::uint64_t PausedTypes::own_changes() const {
  std::lock_guard lock(mutex_);
  return own_changes_;
}

std::optional<bool> PausedTypes::set(const std::vector<std::string>& workflows,
                                     const std::vector<std::string>& activities, std::uint64_t own_changes_before) {
  std::lock_guard lock(mutex_);
  if (own_changes_ != own_changes_before) return std::nullopt;
  // Both replaced, whatever the first returns.
  const bool workflows_changed = replace(workflows_, {workflows.begin(), workflows.end()});
  const bool activities_changed = replace(activities_, {activities.begin(), activities.end()});
  const bool changed = workflows_changed || activities_changed;
  update_any();
  return changed;
}

void PausedTypes::set_one(Kind& kind, const std::string& name, bool paused) {
  std::lock_guard lock(mutex_);
  ++own_changes_;
  auto names = kind.paused;
  if (paused) {
    names.insert(name);
  } else {
    names.erase(name);
  }
  replace(kind, std::move(names));
  update_any();
}

bool PausedTypes::paused(const Kind& kind, std::string_view name) const {
  std::lock_guard lock(mutex_);
  return kind.paused.find(name) != kind.paused.end();
}

std::shared_ptr<const std::string> PausedTypes::names(const Kind& kind) const {
  std::lock_guard lock(mutex_);
  return kind.names_json;
}

}  // namespace durable::detail
