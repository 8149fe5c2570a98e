// Workflows and activities the tests share with the worker processes they start.
#pragma once

#include <durable/durable.hpp>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace durable::test {

using namespace std::chrono_literals;

struct Pair {
  int a = 0;
  int b = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Pair, a, b)

struct AddActivity {
  static constexpr auto name = "add";
  int operator()(ActivityContext&, const Pair& p) const { return p.a + p.b; }
};

struct EchoActivity {
  static constexpr auto name = "echo";
  std::string operator()(ActivityContext&, const std::string& s) const { return s; }
};

struct BoomActivity {
  static constexpr auto name = "boom";
  int operator()(ActivityContext&, const std::string& why) const { throw std::runtime_error("boom: " + why); }
};

// Sleeps in the activity body so tests can see activities overlap.
struct SlowActivity {
  static constexpr auto name = "slow";
  int operator()(ActivityContext&, const int& ms) const {
    std::this_thread::sleep_for(std::chrono::milliseconds{ms});
    return ms;
  }
};

struct HelloWorkflow {
  static constexpr auto name = "hello";
  std::string operator()(WorkflowContext& ctx, const std::string& who) {
    return "hello, " + ctx.call<EchoActivity>(who);
  }
};

// Sums 1..n with n activities started before any is awaited.
struct ParallelWorkflow {
  static constexpr auto name = "parallel";
  int operator()(WorkflowContext& ctx, const int& n) {
    std::vector<Future<int>> futures;
    for (int i = 1; i <= n; ++i) futures.push_back(ctx.start<AddActivity>(Pair{i, 0}));
    int sum = 0;
    for (auto& f : futures) sum += f.get();
    return sum;
  }
};

struct ParallelSlowWorkflow {
  static constexpr auto name = "parallel_slow";
  int operator()(WorkflowContext& ctx, const int& n) {
    std::vector<Future<int>> futures;
    for (int i = 0; i < n; ++i) futures.push_back(ctx.start<SlowActivity>(300));
    int total = 0;
    for (auto& f : futures) total += f.get();
    return total;
  }
};

struct SlowWorkflow {
  static constexpr auto name = "slow_one";
  int operator()(WorkflowContext& ctx, const int& ms) { return ctx.call<SlowActivity>(ms); }
};

// SlowWorkflow with attempts to spare: the multi-process tests kill workers with a body in flight.
struct SparedSlowWorkflow {
  static constexpr auto name = "slow_spared";
  int operator()(WorkflowContext& ctx, const int& ms) {
    return ctx.call<SlowActivity>(ms, ActivityOptions{.retry = RetryPolicy{.max_attempts = 3}});
  }
};

// Calls SlowActivity `calls` times at once on activity queue `queue` (attempts to spare), with
// this priority and key (empty: the run's), and sums what they return.
struct QueuedCallsInput {
  std::string queue;
  int calls = 0;
  int ms = 0;
  int priority = 0;
  std::string key;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(QueuedCallsInput, queue, calls, ms, priority, key)

struct QueuedCallsWorkflow {
  static constexpr auto name = "queued_calls";
  int operator()(WorkflowContext& ctx, const QueuedCallsInput& in) {
    ActivityOptions options{.retry = RetryPolicy{.max_attempts = 3}, .queue = in.queue, .priority = in.priority};
    if (!in.key.empty()) options.concurrency_key = in.key;
    std::vector<Future<int>> calls;
    for (int i = 0; i < in.calls; ++i) calls.push_back(ctx.start<SlowActivity>(in.ms, options));
    int total = 0;
    for (auto& call : calls) total += call.get();
    return total;
  }
};

// Sleeps durably and reports how long the database clock says it slept, and a journaled uuid.
struct SleepWorkflow {
  static constexpr auto name = "sleeper";
  nlohmann::json operator()(WorkflowContext& ctx, const int& ms) {
    auto before = ctx.now();
    ctx.sleep(std::chrono::milliseconds{ms});
    auto after = ctx.now();
    return {{"slept_ms", std::chrono::duration_cast<std::chrono::milliseconds>(after - before).count()},
            {"id", ctx.uuid()}};
  }
};

struct CatchFailureWorkflow {
  static constexpr auto name = "catch_failure";
  nlohmann::json operator()(WorkflowContext& ctx, const std::string& why) {
    try {
      ctx.call<BoomActivity>(why);
      return {{"caught", false}};
    } catch (const ActivityFailed& e) {
      return {{"caught", true}, {"type", e.error_type()}, {"message", e.error_message()}, {"activity", e.activity()}};
    }
  }
};

struct FailingWorkflow {
  static constexpr auto name = "failing";
  int operator()(WorkflowContext& ctx, const std::string& why) {
    ctx.call<EchoActivity>(why);
    throw std::logic_error("workflow gave up: " + why);
  }
};

// A chain of 5 increments: each step's input is the previous step's result.
struct ChainWorkflow {
  static constexpr auto name = "chain";
  int operator()(WorkflowContext& ctx, const int& start) {
    int x = start;
    for (int i = 0; i < 5; ++i) x = ctx.call<AddActivity>(Pair{x, 1});
    return x;
  }
};

// Crash test: each step appends a line to a log file; a step blocks while a "hang" file exists.
struct StepInput {
  std::string log;
  std::string hang;  // while this file exists, the step whose number equals hang_step blocks
  int step = 0;
  int hang_step = -1;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StepInput, log, hang, step, hang_step)

struct RecordStepActivity {
  static constexpr auto name = "record_step";
  static ActivityOptions options() { return {.retry = RetryPolicy{.max_attempts = 3}, .timeout = 2s}; }
  int operator()(ActivityContext& ctx, const StepInput& in) const {
    { std::ofstream(in.log, std::ios::app) << "step " << in.step << " attempt " << ctx.attempt() << "\n"; }
    while (in.step == in.hang_step && std::filesystem::exists(in.hang)) std::this_thread::sleep_for(20ms);
    return in.step * 10;
  }
};

struct StepsInput {
  std::string log;
  std::string hang;
  int steps = 0;
  int hang_step = -1;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StepsInput, log, hang, steps, hang_step)

struct StepsWorkflow {
  static constexpr auto name = "steps";
  int operator()(WorkflowContext& ctx, const StepsInput& in) {
    int sum = 0;
    for (int i = 0; i < in.steps; ++i) sum += ctx.call<RecordStepActivity>(StepInput{in.log, in.hang, i, in.hang_step});
    return sum;
  }
};

// Receives `count` messages of topic "item", each waited for as long as it takes, with the slow
// activity called for `between_ms` before each when > 0; returns them in the order received.
struct InboxInput {
  int count = 1;
  int between_ms = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(InboxInput, count, between_ms)

struct InboxWorkflow {
  static constexpr auto name = "inbox";
  std::vector<std::string> operator()(WorkflowContext& ctx, const InboxInput& in) {
    std::vector<std::string> got;
    for (int i = 0; i < in.count; ++i) {
      if (in.between_ms > 0) ctx.call<SlowActivity>(in.between_ms);
      got.push_back(ctx.receive<std::string>("item"));
    }
    return got;
  }
};

// Waits up to `timeout_ms` for an "approval" message.
struct ApprovalWorkflow {
  static constexpr auto name = "approval";
  std::string operator()(WorkflowContext& ctx, const int& timeout_ms) {
    auto by = ctx.receive<std::string>("approval", std::chrono::milliseconds{timeout_ms});
    return by ? "approved by " + *by : "timed out";
  }
};

struct FirstOfInput {
  int count = 1;
  int timeout_ms = 3'600'000;
  int between_ms = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FirstOfInput, count, timeout_ms, between_ms)

// `count` times: the next "item" message or a timer of `timeout_ms`, whichever comes first.
struct FirstOfWorkflow {
  static constexpr auto name = "first_of";
  std::vector<std::string> operator()(WorkflowContext& ctx, const FirstOfInput& in) {
    std::vector<std::string> got;
    for (int i = 0; i < in.count; ++i) {
      if (in.between_ms > 0) ctx.call<SlowActivity>(in.between_ms);
      auto item = ctx.start_receive<std::string>("item");
      auto deadline = ctx.start_timer(std::chrono::milliseconds{in.timeout_ms});
      got.push_back(ctx.wait_any(item, deadline) == 0 ? item.get() : "timed out");
    }
    return got;
  }
};

// An activity of `activity_ms` against a timer of `timeout_ms`: which finished first.
struct RaceInput {
  int activity_ms = 0;
  int timeout_ms = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RaceInput, activity_ms, timeout_ms)

struct RaceWorkflow {
  static constexpr auto name = "race";
  std::string operator()(WorkflowContext& ctx, const RaceInput& in) {
    auto work = ctx.start<SlowActivity>(in.activity_ms);
    auto deadline = ctx.start_timer(std::chrono::milliseconds{in.timeout_ms});
    if (ctx.wait_any(work, deadline) == 1) return "timer";
    return "activity " + std::to_string(work.get());
  }
};

// Sends `text` on topic "item" to workflow `target`; returns the message id, or what went wrong.
struct RelayInput {
  std::string target;
  std::string text;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RelayInput, target, text)

struct RelayWorkflow {
  static constexpr auto name = "relay";
  std::string operator()(WorkflowContext& ctx, const RelayInput& in) {
    try {
      return ctx.send(in.target, "item", in.text);
    } catch (const WorkflowNotFound&) {
      return "not found";
    } catch (const WorkflowEnded& e) {
      return "ended: " + e.status();
    }
  }
};

// Publishes "progress" 1, waits for a "go" message, publishes 2 (replacing 1), and returns what
// the message said.
struct ProgressWorkflow {
  static constexpr auto name = "progress";
  std::string operator()(WorkflowContext& ctx, const int&) {
    ctx.set_event("progress", 1);
    auto go = ctx.receive<std::string>("go");
    ctx.set_event("progress", 2);
    return go;
  }
};

// The child of the fan-out tests: n + n, computed in an activity.
struct DoubleWorkflow {
  static constexpr auto name = "double";
  // Retried: crash tests kill workers while children's activities run (a lost lease is an attempt).
  int operator()(WorkflowContext& ctx, const int& n) {
    return ctx.call<AddActivity>(Pair{n, n}, {.retry = RetryPolicy{.max_attempts = 3}});
  }
};

// Starts `count` children "<own id>/<i>" (DoubleWorkflow of i, i = 1..count) before awaiting
// any, and returns the sum of their results: count * (count + 1).
struct FanOutWorkflow {
  static constexpr auto name = "fan_out";
  int operator()(WorkflowContext& ctx, const int& count) {
    std::vector<ChildFuture<int>> children;
    for (int i = 1; i <= count; ++i) {
      children.push_back(ctx.start_child<DoubleWorkflow>(ctx.workflow_id().str() + "/" + std::to_string(i), i));
    }
    int sum = 0;
    for (auto& child : children) sum += child.get();
    return sum;
  }
};

// Calls a child of workflow `name` ("double", "failing", "sleeper", ...) under `child_id` with
// `input`, and says how it went: "result <json>", "taken <status of the run holding the id>" or
// "failed <status> <error type>: <message>".
struct CallChildInput {
  std::string child_id;
  std::string name = "double";
  nlohmann::json input = 1;
  bool reuse_if_ended = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CallChildInput, child_id, name, input, reuse_if_ended)

struct CallChildWorkflow {
  static constexpr auto name = "call_child";
  std::string operator()(WorkflowContext& ctx, const CallChildInput& in) {
    ChildOptions options;
    if (in.reuse_if_ended) options.id_reuse = IdReusePolicy::allow_if_ended;
    try {
      return "result " +
             ctx.call_child(WorkflowRef<nlohmann::json, nlohmann::json>{in.name}, in.child_id, in.input, options)
                 .dump();
    } catch (const WorkflowAlreadyStarted& e) {
      // An activity after it: its completion replays the start, which must throw the same.
      return "taken " + ctx.call<EchoActivity>(e.existing_status());
    } catch (const ChildWorkflowFailed& e) {
      return "failed " + e.status() + " " + e.error_type() + ": " + e.error_message();
    }
  }
};

// Starts a chain of `depth` more levels of itself ("<id>/c"), the last of which waits for a "go"
// message; each level returns what the level below returned.
struct NestInput {
  int depth = 0;
  bool abandon = false;  // the children's parent-close policy: abandon instead of cancel
  bool wait = true;      // false: start the child and end at once, without awaiting it
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(NestInput, depth, abandon, wait)

struct NestWorkflow {
  static constexpr auto name = "nest";
  std::string operator()(WorkflowContext& ctx, const NestInput& in) {
    if (in.depth == 0) return ctx.receive<std::string>("go");
    ChildOptions options;
    if (in.abandon) options.parent_close = ParentClosePolicy::abandon;
    auto child = ctx.start_child<NestWorkflow>(ctx.workflow_id().str() + "/c",
                                               NestInput{in.depth - 1, in.abandon, true}, options);
    if (!in.wait) return "left";
    return child.get();
  }
};

// Waits up to `ms`, giving up early once its run no longer wants it (ActivityContext::cancelled).
struct StallActivity {
  static constexpr auto name = "stall";
  int operator()(ActivityContext& ctx, const int& ms) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds{ms};
    while (!ctx.cancelled() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(20ms);
    return ms;
  }
};

// Charges (an activity of `charge_ms`: the stall one, or with `plain_charge` the slow one, which
// does not notice a cancel); when cancelled meanwhile, refunds (a line "step 99" in `log`, per
// attempt) and ends cancelled, or with `swallow` returns "refunded: <reason>".
struct RefundInput {
  int charge_ms = 30'000;
  std::string log;
  bool swallow = false;
  bool plain_charge = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RefundInput, charge_ms, log, swallow, plain_charge)

struct RefundingWorkflow {
  static constexpr auto name = "refunding";
  std::string operator()(WorkflowContext& ctx, const RefundInput& in) {
    try {
      if (in.plain_charge) {
        ctx.call<SlowActivity>(in.charge_ms);
      } else {
        ctx.call<StallActivity>(in.charge_ms);
      }
      return "charged";
    } catch (const WorkflowCancelled& e) {
      ctx.call<RecordStepActivity>(StepInput{in.log, "", 99, -1});
      if (in.swallow) return "refunded: " + e.reason();
      throw;
    }
  }
};

// Awaits a child that waits for "go" ("<id>/c"); when cancelled meanwhile, awaits it again and
// says how the child ended.
struct GuardianWorkflow {
  static constexpr auto name = "guardian";
  std::string operator()(WorkflowContext& ctx, const int&) {
    auto child = ctx.start_child<NestWorkflow>(ctx.workflow_id().str() + "/c", NestInput{0});
    try {
      return child.get();
    } catch (const WorkflowCancelled&) {
      try {
        return "child finished: " + child.get();
      } catch (const ChildWorkflowFailed& e) {
        return "child " + e.status() + ": " + e.error_message();
      }
    }
  }
};

// Counts to `total`, an activity per count, continuing as new every `every` counts. Before each
// continue it takes the "tick" messages sent so far; the last run waits until it has `ticks`.
struct LoopState {
  int done = 0;
  int total = 0;
  int every = 100;
  int ticks = 0;
  long long sum = 0;
  std::vector<std::string> got;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LoopState, done, total, every, ticks, sum, got)

inline LoopState loop_of(int total, int every, int ticks = 0) {
  LoopState s;
  s.total = total;
  s.every = every;
  s.ticks = ticks;
  return s;
}

struct LoopWorkflow {
  static constexpr auto name = "loop";
  LoopState operator()(WorkflowContext& ctx, LoopState s) {
    // Attempts to spare: the crash tests kill workers mid-loop, with a body in flight.
    const ActivityOptions spare{.retry = RetryPolicy{.max_attempts = 3}};
    for (int i = 0; i < s.every && s.done < s.total; ++i) s.sum += ctx.call<AddActivity>(Pair{s.done++, 0}, spare);
    while (auto tick = ctx.receive<std::string>("tick", 0ms)) s.got.push_back(*tick);
    if (s.done < s.total) ctx.continue_as_new(s);
    while (static_cast<int>(s.got.size()) < s.ticks) s.got.push_back(ctx.receive<std::string>("tick"));
    return s;
  }
};

// Run n waits for a "go" message and continues as new with n + 1; run 2 returns the "done"
// message. A `bad` input continues with a string instead (and returns what it caught).
struct HopWorkflow {
  static constexpr auto name = "hop";
  std::string operator()(WorkflowContext& ctx, const int& n) {
    if (n < 0) {
      try {
        ctx.continue_as_new(std::string("not a number"));
      } catch (const PayloadError& e) {
        return std::string("refused: ") + e.what();
      }
    }
    if (n >= 2) return ctx.receive<std::string>("done");
    ctx.receive<std::string>("go");
    ctx.continue_as_new(n + 1);
  }
};

// For the clock-skew tests: each step whose timing the engine judges by a clock. An activity
// that fails its three attempts, 400 ms apart (caught); a slow one under a 2 s timeout, attempts
// to spare (a lease); a durable sleep of 1 s.
struct ClockedStepsWorkflow {
  static constexpr auto name = "clocked_steps";
  int operator()(WorkflowContext& ctx, const int& slow_ms) {
    try {
      ctx.call<BoomActivity>("clocked",
                             {.retry = RetryPolicy{.max_attempts = 3, .base = std::chrono::milliseconds{400}}});
    } catch (const ActivityFailed&) {
    }
    const int slept =
        ctx.call<SlowActivity>(slow_ms, {.retry = RetryPolicy{.max_attempts = 3}, .timeout = std::chrono::seconds{2}});
    ctx.sleep(std::chrono::seconds{1});
    return slept;
  }
};

inline void register_all(Engine& engine) {
  engine.add<AddActivity>()
      .add<EchoActivity>()
      .add<BoomActivity>()
      .add<SlowActivity>()
      .add<RecordStepActivity>()
      .add<HelloWorkflow>()
      .add<ParallelWorkflow>()
      .add<ParallelSlowWorkflow>()
      .add<SlowWorkflow>()
      .add<SparedSlowWorkflow>()
      .add<SleepWorkflow>()
      .add<CatchFailureWorkflow>()
      .add<FailingWorkflow>()
      .add<ChainWorkflow>()
      .add<StepsWorkflow>()
      .add<InboxWorkflow>()
      .add<ApprovalWorkflow>()
      .add<FirstOfWorkflow>()
      .add<RaceWorkflow>()
      .add<RelayWorkflow>()
      .add<ProgressWorkflow>()
      .add<DoubleWorkflow>()
      .add<FanOutWorkflow>()
      .add<CallChildWorkflow>()
      .add<NestWorkflow>()
      .add<StallActivity>()
      .add<RefundingWorkflow>()
      .add<GuardianWorkflow>()
      .add<LoopWorkflow>()
      .add<HopWorkflow>()
      .add<ClockedStepsWorkflow>()
      .add<QueuedCallsWorkflow>();
}

}  // namespace durable::test
