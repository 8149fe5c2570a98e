// Saga: compensations for workflow code, run newest first when a later step fails or the run is
// cancelled. Plain workflow code over WorkflowContext: each compensation is a durable activity call.
//
//   durable::Saga saga(ctx);
//   try {
//     auto hold = ctx.call<ReserveStock>(order);
//     saga.add_compensation<ReleaseStock>(hold);
//     auto charge = ctx.call<ChargeCard>(order);
//     saga.add_compensation<Refund>(charge);
//     ctx.call<Ship>(order);
//   } catch (const durable::ActivityFailed&) {
//     saga.compensate();  // Refund, then ReleaseStock
//     throw;
//   } catch (const durable::WorkflowCancelled&) {
//     saga.compensate();
//     throw;
//   }
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "durable/detail/payload.hpp"
#include "durable/options.hpp"
#include "durable/workflow.hpp"

namespace durable {

struct SagaOptions {
  // false (the default): compensate() runs one compensation at a time, newest first, each started
  // once the one before it ended. true: it starts every compensation at once (scheduled newest
  // first, in one commit), then waits for them all.
  bool parallel = false;
};

// The compensations of a workflow's steps. Like the rest of workflow code it is rebuilt on every
// replay: what it calls depends only on the code's calls and the journal, so replays, on any
// engine, make the same compensation calls and start none of them twice.
class Saga {
 public:
  explicit Saga(WorkflowContext& ctx, SagaOptions options = {}) : ctx_(&ctx), options_(options) {}
  Saga(const Saga&) = delete;  // a copy would run the same compensations again
  Saga& operator=(const Saga&) = delete;
  Saga(Saga&&) = default;
  Saga& operator=(Saga&&) = default;

  // After a step succeeded: the activity that undoes it, its input, and its call-site options
  // (its own retry policy and timeout; the activity's declared options and defaults fill in the
  // rest, as for any call). Throws PayloadError, here, when the input does not convert or is over
  // the payload limits; nothing is added then, and the compensations added before stay.
  template <detail::Named A>
  void add_compensation(const detail::input_of<A>& input, const ActivityOptions& options = {}) {
    add(A::name, detail::to_payload(input, "a compensation's input"), options);
  }
  template <typename In, typename Out>
  void add_compensation(const ActivityRef<In, Out>& activity, const std::type_identity_t<In>& input,
                        const ActivityOptions& options = {}) {
    add(activity.name, detail::to_payload(input, "a compensation's input"), options);
  }

  // Runs the compensations added and not run yet, newest first (all started at once with
  // SagaOptions::parallel), each a durable activity call: journaled, retried under its policy,
  // its result committed once; a replay after a crash runs only those not committed. Each runs
  // once: a later compensate() runs only compensations added since. Every one is attempted even
  // when an earlier one failed for good; then, if any failed, throws CompensationFailed naming
  // each. A compensation whose call is refused (an unknown activity, invalid options or key) is
  // journaled as refused, never runs and is named as failed with 0 attempts; the others still run.
  // A cancel of the run seen while compensating does not stop it: the compensations it dropped
  // (docs/concepts.md#cancellation) are started again, the rest run, and then this throws
  // WorkflowCancelled (or CompensationFailed, when one failed). Call it from a catch block and
  // rethrow: CompensationFailed then also names the error it compensated for.
  void compensate();

  // Compensations added and not run yet.
  std::size_t size() const { return pending_.size(); }

 private:
  struct Compensation {
    std::string activity;
    Json input;
    ActivityOptions options;
  };
  void add(std::string activity, Json input, const ActivityOptions& options);

  WorkflowContext* ctx_;
  SagaOptions options_;
  std::vector<Compensation> pending_;  // oldest first
};

}  // namespace durable
