#include "durable/saga.hpp"

#include <exception>
#include <optional>
#include <utility>

#include "base/exceptions.hpp"

namespace durable {

namespace {

// The error being handled where compensate() was called, "type: message"; empty outside a catch.
std::string handled_error() {
  const std::exception_ptr handled = std::current_exception();
  if (!handled) return {};
  try {
    std::rethrow_exception(handled);
  } catch (const std::exception&) {
    const detail::ErrorInfo info = detail::current_error();
    return info.type + ": " + info.message;
  } catch (...) {  // not an error of the code's (a signal of the engine's): nothing to name
    return {};
  }
}

// One compensate(): starts and awaits compensations, collects those that failed for good, and
// keeps the one cancel of the run it may see (delivered once per run).
class Compensating {
 public:
  explicit Compensating(WorkflowContext& ctx) : ctx_(ctx) {}

  // Starts it. A cancel seen at the call (no more than one) is kept and the call made again. A
  // call the engine refuses (an unknown activity, invalid options or key; journaled as refused)
  // is a compensation that failed, never run: nullopt, and the others still run.
  std::optional<Future<Json>> start(const std::string& activity, const Json& input, const ActivityOptions& options) {
    for (;;) {
      try {
        return ctx_.start(ActivityRef<Json, Json>{activity}, input, options);
      } catch (const WorkflowCancelled& e) {
        keep(e);
      } catch (const NonDeterminismError&) {
        throw;  // the code, not the call: the run stops there
      } catch (const std::exception&) {
        const detail::ErrorInfo refused = detail::current_error();
        failures_.push_back({activity, refused.type, refused.message, 0});
        return std::nullopt;
      }
    }
  }

  // Waits for it: false when the run's cancel dropped it (it must start again).
  bool await(Future<Json>& future) {
    try {
      future.get();
    } catch (const WorkflowCancelled& e) {
      keep(e);
      return false;
    } catch (const ActivityFailed& e) {
      // Once the cancel is seen, the activities it dropped fail with its type when awaited.
      if (cancel_ && e.error_type() == "durable::WorkflowCancelled") return false;
      failures_.push_back({e.activity(), e.error_type(), e.error_message(), e.attempts()});
    }
    return true;
  }

  // CompensationFailed when any failed, else the cancel seen, else nothing.
  void finish(std::size_t compensations, std::string cause) {
    if (!failures_.empty()) throw CompensationFailed(std::move(failures_), compensations, std::move(cause));
    if (cancel_) throw *cancel_;
  }

 private:
  void keep(const WorkflowCancelled& e) {
    if (cancel_) throw;  // never twice in one run; if it were, looping again would not end
    cancel_.emplace(e);
  }

  WorkflowContext& ctx_;
  std::vector<FailedCompensation> failures_;
  std::optional<WorkflowCancelled> cancel_;
};

}  // namespace

void Saga::add(std::string activity, Json input, const ActivityOptions& options) {
  detail::check_payload(input, "the input of compensation '" + activity + "'");
  pending_.push_back({std::move(activity), std::move(input), options});
}

void Saga::compensate() {
  const std::string cause = handled_error();
  // Taken out first: whatever happens below, these are not run by a later compensate().
  std::vector<Compensation> newest_first(std::make_move_iterator(pending_.rbegin()),
                                         std::make_move_iterator(pending_.rend()));
  pending_.clear();
  Compensating run(*ctx_);
  auto start = [&](const Compensation& c) { return run.start(c.activity, c.input, c.options); };
  if (!options_.parallel) {
    for (const Compensation& c : newest_first) {
      std::optional<Future<Json>> future = start(c);
      while (future && !run.await(*future)) future = start(c);  // dropped by the cancel: again
    }
  } else {
    std::vector<const Compensation*> to_start;
    for (const Compensation& c : newest_first) to_start.push_back(&c);
    while (!to_start.empty()) {  // twice at most: a cancel is seen once
      std::vector<std::pair<const Compensation*, Future<Json>>> started;
      for (const Compensation* c : to_start) {
        if (auto future = start(*c)) started.emplace_back(c, std::move(*future));
      }
      to_start.clear();
      for (auto& [c, future] : started) {
        if (!run.await(future)) to_start.push_back(c);  // dropped by the cancel: again
      }
    }
  }
  run.finish(newest_first.size(), cause);
}

}  // namespace durable
