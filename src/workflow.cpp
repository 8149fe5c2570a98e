#include "durable/workflow.hpp"

#include "replay/replay.hpp"

namespace durable {

const std::string& WorkflowContext::workflow_id() const { return replay_.workflow_id(); }

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

}  // namespace durable
