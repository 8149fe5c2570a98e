// The saga tests' workflow and activities, shared with the worker processes they start.
#pragma once

#include <algorithm>
#include <durable/durable.hpp>
#include <durable/testing.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace durable::test {

using namespace std::chrono_literals;

// A saga of `steps` steps, each followed by its compensation (undo n). Every body appends a line
// to `log` ("step <n>", "undo <n> attempt <a>"); undo n also inserts (workflow id, n) into the
// table <schema>.saga_undone, once (ON CONFLICT DO NOTHING).
struct SagaPlan {
  std::string log{};
  std::string schema{};
  int steps = 5;
  int fail_at = 3;                   // this step fails for good; 0: none does
  int stall_at = 0;                  // this step waits until the run no longer wants it (cancel it there)
  std::vector<int> failing_undos{};  // these undos fail on every attempt
  int hang_undo = 0;  // this undo waits while the file `hang` exists, or until the run no longer wants it
  std::string hang{};
  bool parallel = false;
  bool report = false;  // catch CompensationFailed and return what it says
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SagaPlan, log, schema, steps, fail_at, stall_at, failing_undos, hang_undo, hang,
                                   parallel, report)

struct SagaStepInput {
  std::string log{};
  int n = 0;
  bool fail = false;
  bool stall = false;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SagaStepInput, log, n, fail, stall)

struct UndoInput {
  std::string log{};
  std::string schema{};
  std::string workflow_id{};
  int n = 0;
  bool fail = false;
  std::string hang{};  // while this file exists the body waits (none: it does not)
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(UndoInput, log, schema, workflow_id, n, fail, hang)

inline void log_line(const std::string& path, const std::string& line) {
  std::ofstream(path, std::ios::app) << line << "\n";
}

struct SagaStep {
  static constexpr auto name = "saga_step";
  int operator()(ActivityContext& ctx, const SagaStepInput& in) const {
    log_line(in.log, "step " + std::to_string(in.n));
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (in.stall && !ctx.cancelled() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(20ms);
    if (in.fail) throw std::runtime_error("step " + std::to_string(in.n) + " refused");
    return in.n;
  }
};

struct SagaUndo {
  static constexpr auto name = "saga_undo";
  int operator()(ActivityContext& ctx, const UndoInput& in) const {
    log_line(in.log, "undo " + std::to_string(in.n) + " attempt " + std::to_string(ctx.attempt()));
    while (!in.hang.empty() && std::filesystem::exists(in.hang) && !ctx.cancelled()) std::this_thread::sleep_for(20ms);
    if (ctx.cancelled()) throw std::runtime_error("undo " + std::to_string(in.n) + " stopped: its run dropped it");
    if (in.fail) throw std::runtime_error("undo " + std::to_string(in.n) + " refused");
    pqxx::connection conn(testing::database_url());
    pqxx::work tx(conn);
    tx.exec_params("INSERT INTO " + tx.quote_name(in.schema) +
                       ".saga_undone (workflow_id, n) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                   in.workflow_id, in.n);
    tx.commit();
    return in.n;
  }
};

struct SagaWorkflow {
  static constexpr auto name = "saga";
  std::string operator()(WorkflowContext& ctx, const SagaPlan& plan) {
    Saga saga(ctx, {.parallel = plan.parallel});
    try {
      for (int n = 1; n <= plan.steps; ++n) {
        ctx.call<SagaStep>(SagaStepInput{plan.log, n, n == plan.fail_at, n == plan.stall_at});
        const bool fails =
            std::find(plan.failing_undos.begin(), plan.failing_undos.end(), n) != plan.failing_undos.end();
        const UndoInput undo{plan.log, plan.schema, ctx.workflow_id().str(),
                             n,        fails,       n == plan.hang_undo ? plan.hang : ""};
        // Its own retry policy: a lost lease counts as an attempt. Odd steps name it by type, even by reference.
        const ActivityOptions retried{.retry = RetryPolicy{.max_attempts = 3}};
        if (n % 2 == 1) {
          saga.add_compensation<SagaUndo>(undo, retried);
        } else {
          saga.add_compensation(ActivityRef<UndoInput, int>{"saga_undo"}, undo, retried);
        }
      }
      return "done";
    } catch (const ActivityFailed&) {
      if (auto report = compensate(saga, plan)) return *report;
      throw;
    } catch (const WorkflowCancelled&) {
      if (auto report = compensate(saga, plan)) return *report;
      throw;
    }
  }

  // With plan.report, what CompensationFailed said, one line a failure, then its cause.
  static std::optional<std::string> compensate(Saga& saga, const SagaPlan& plan) {
    try {
      saga.compensate();
    } catch (const CompensationFailed& e) {
      if (!plan.report) throw;
      std::string report = std::to_string(e.failures().size()) + " of " + std::to_string(e.compensations()) + "\n";
      for (const auto& f : e.failures()) {
        report +=
            f.activity + " | " + f.error_type + " | " + f.error_message + " | " + std::to_string(f.attempts) + "\n";
      }
      return report + "cause: " + e.cause();
    }
    return std::nullopt;
  }
};

// compensate() with nothing added, then twice with two added: returns size() along the way.
struct SagaTwiceWorkflow {
  static constexpr auto name = "saga_twice";
  std::vector<std::size_t> operator()(WorkflowContext& ctx, const SagaPlan& plan) {
    Saga saga(ctx);
    std::vector<std::size_t> sizes{saga.size()};
    saga.compensate();
    for (int n = 1; n <= 2; ++n) {
      ctx.call<SagaStep>(SagaStepInput{.log = plan.log, .n = n});
      saga.add_compensation<SagaUndo>(
          UndoInput{.log = plan.log, .schema = plan.schema, .workflow_id = ctx.workflow_id().str(), .n = n});
    }
    sizes.push_back(saga.size());
    saga.compensate();
    sizes.push_back(saga.size());
    saga.compensate();
    sizes.push_back(saga.size());
    return sizes;
  }
};

inline void register_sagas(Engine& engine) {
  engine.add<SagaStep>().add<SagaUndo>().add<SagaWorkflow>().add<SagaTwiceWorkflow>();
}

}  // namespace durable::test
