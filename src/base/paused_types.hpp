// The workflow and activity types an operator paused (Queues::pause_workflow, pause_activity), as
// this engine last read them. Claims ask the database only for the registered names that are not
// paused, so no statement on the step path reads the pauses (reading them there cost about 10 %
// of steps/s); work this engine takes without a claim (a start's run leased at once, a replay's
// calls leased at once, a step's in-place continue) asks here first.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace durable::detail {

class PausedTypes {
 public:
  // The names this engine runs; until then (a client that was never started) nothing is served.
  void serve(std::vector<std::string> workflows, std::vector<std::string> activities);
  // How many pauses and resumes this engine made itself (set_workflow, set_activity).
  std::uint64_t own_changes() const;
  // The paused names as read from the database by a query begun when own_changes() was
  // `own_changes_before`: true when they changed, false when not, nullopt when this engine paused
  // or resumed something since (the read may predate it: read again).
  std::optional<bool> set(const std::vector<std::string>& workflows, const std::vector<std::string>& activities,
                          std::uint64_t own_changes_before);
  // What this engine just paused or resumed.
  void set_workflow(const std::string& name, bool paused) { set_one(workflows_, name, paused); }
  void set_activity(const std::string& name, bool paused) { set_one(activities_, name, paused); }

  bool workflow_paused(std::string_view name) const { return any_.load() && paused(workflows_, name); }
  bool activity_paused(std::string_view name) const { return any_.load() && paused(activities_, name); }
  // The names this engine runs that are not paused, as a json array for the claims' statements.
  std::shared_ptr<const std::string> workflow_names_json() const { return names(workflows_); }
  std::shared_ptr<const std::string> activity_names_json() const { return names(activities_); }

 private:
  struct Kind {
    std::vector<std::string> served;
    std::set<std::string, std::less<>> paused;
    std::shared_ptr<const std::string> names_json = std::make_shared<const std::string>("[]");
  };
  bool paused(const Kind& kind, std::string_view name) const;
  std::shared_ptr<const std::string> names(const Kind& kind) const;
  void set_one(Kind& kind, const std::string& name, bool paused);
  bool replace(Kind& kind, std::set<std::string, std::less<>> paused);  // under mutex_
  void update_any();                                                    // under mutex_

  mutable std::mutex mutex_;
  std::atomic<bool> any_{false};  // read first, without the lock: nothing is paused almost always
  std::uint64_t own_changes_ = 0;
  Kind workflows_, activities_;
};

}  // namespace durable::detail
