#include "durable/activity.hpp"

#include "pipeline/attempt_state.hpp"

namespace durable {

ActivityContext::ActivityContext(std::shared_ptr<detail::AttemptState> state) : state_(std::move(state)) {}

const WorkflowId& ActivityContext::workflow_id() const { return state_->workflow_id; }
const std::string& ActivityContext::activity_name() const { return state_->activity_name; }
int ActivityContext::step() const { return state_->step; }
int ActivityContext::attempt() const { return state_->attempt; }
std::chrono::steady_clock::time_point ActivityContext::deadline() const { return state_->deadline_point(); }
bool ActivityContext::cancelled() const { return state_->cancelled.load(); }
bool ActivityContext::heartbeat(const Json& details) { return state_->heartbeat(details); }
const Json& ActivityContext::last_heartbeat() const { return state_->last_heartbeat; }

}  // namespace durable
