#include "durable/workflow.hpp"

#include "replay/replay.hpp"
#include "schedule/fire_plan.hpp"

namespace durable {

const WorkflowId& WorkflowContext::workflow_id() const { return replay_.workflow_id(); }

std::optional<ScheduleContext> WorkflowContext::schedule() const {
  const Json& s = replay_.schedule_context();
  if (s.is_null()) return std::nullopt;
  ScheduleContext ctx;
  ctx.schedule_id = s.at("id").get<std::string>();
  ctx.nominal_time = ctx.window_end = detail::from_us(s.at("nominal_us").get<std::int64_t>());
  ctx.window_start = detail::from_us(s.at("window_start_us").get<std::int64_t>());
  ctx.fires = s.at("fires").get<std::int64_t>();
  return ctx;
}

int WorkflowContext::schedule_activity(const std::string& name, Json input, const ActivityOptions& options) {
  return replay_.schedule_activity(name, std::move(input), options);
}

Json WorkflowContext::await_activity(int step) { return replay_.await_activity(step); }

void WorkflowContext::sleep(Duration duration) { replay_.sleep(duration); }

std::chrono::system_clock::time_point WorkflowContext::now() {
  return std::chrono::system_clock::time_point{
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::microseconds{replay_.now_us()})};
}

std::string WorkflowContext::uuid() { return replay_.uuid(); }

std::optional<Json> WorkflowContext::receive_payload(const std::string& topic, std::optional<Duration> timeout) {
  return replay_.receive(topic, timeout);
}

int WorkflowContext::start_timer_step(Duration duration) { return replay_.start_timer(duration); }

void WorkflowContext::await_timer(int step) { replay_.await_timer(step); }

int WorkflowContext::start_receive_step(const std::string& topic) { return replay_.start_receive(topic); }

Json WorkflowContext::await_receive(int step) { return replay_.await_receive(step); }

std::size_t WorkflowContext::wait_any_steps(const std::vector<int>& steps) { return replay_.wait_any(steps); }

void WorkflowContext::set_event_payload(const std::string& key, Json value) {
  replay_.set_event(key, std::move(value));
}

std::string WorkflowContext::send_payload(const WorkflowId& workflow_id, const std::string& topic, Json payload,
                                          const SendOptions& options) {
  return replay_.send(workflow_id.str(), topic, std::move(payload), options);
}

int WorkflowContext::start_child_step(const std::string& name, const WorkflowId& child_id, Json input,
                                      const ChildOptions& options) {
  return replay_.start_child(name, child_id.str(), std::move(input), options);
}

Json WorkflowContext::await_child(int step) { return replay_.await_child(step); }

bool WorkflowContext::patched(const std::string& change_id) { return replay_.patched(change_id); }

void WorkflowContext::deprecate_patch(const std::string& change_id) { replay_.deprecate_patch(change_id); }

bool WorkflowContext::is_replaying() const { return replay_.is_replaying(); }

spdlog::logger& WorkflowContext::logger() { return replay_.logger(); }

void WorkflowContext::continue_as_new_payload(Json input) { replay_.continue_as_new(std::move(input)); }

}  // namespace durable
