// The workflows and activities an engine knows by name.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "durable/activity.hpp"
#include "durable/queue_records.hpp"
#include "durable/workflow.hpp"

namespace durable::detail {

// The activity every engine that runs workflows registers itself: WorkflowContext::send.
inline constexpr const char* send_message_activity = "durable.send";

struct Registry {
  std::map<std::string, ActivityDefinition> activities;
  std::map<std::string, WorkflowDefinition> workflows;
  std::map<std::string, std::string> triggers;  // trigger name -> workflow name
  std::map<std::string, QueueSpec> queues;      // added by Engine::add_queue, defined at start()

  // Throw UnknownActivity / UnknownWorkflow naming what is registered.
  const ActivityDefinition& activity(const std::string& name) const;
  const WorkflowDefinition& workflow(const std::string& name) const;

  // The names, in order; and as JSON arrays, the form the claim statements take.
  std::vector<std::string> activity_names() const;
  std::vector<std::string> workflow_names() const;
  std::string activity_names_json() const;
  std::string workflow_names_json() const;
};

}  // namespace durable::detail
