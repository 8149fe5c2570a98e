// Operations: find and fix runs with the management API (Engine::runs()). Three invoices fail on
// purpose (the tax service is down); the program lists the failed runs, fixes the cause, resumes
// one, forks another from a step, reads a history, prunes what ended, and prints the audit trail.
// See docs/operations.md, "Finding and fixing runs".
//
// Run: build/examples/07-operations   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <atomic>

using namespace std::chrono_literals;

std::atomic<bool> tax_service_up{false};  // the cause an operator fixes

struct PriceInvoice {
  static constexpr auto name = "price_invoice";
  int operator()(durable::ActivityContext&, const int& items) const { return items * 100; }
};

struct AddTax {
  static constexpr auto name = "add_tax";
  static durable::ActivityOptions options() { return {.retry = durable::RetryPolicy{.max_attempts = 2, .base = 10ms}}; }
  int operator()(durable::ActivityContext&, const int& cents) const {
    if (!tax_service_up) throw std::runtime_error("tax service unavailable");
    return cents + cents / 5;
  }
};

struct Invoice {
  static constexpr auto name = "invoice";
  int operator()(durable::WorkflowContext& ctx, const int& items) {
    const int net = ctx.call<PriceInvoice>(items);  // step 0
    return ctx.call<AddTax>(net);                   // step 1
  }
};

int main() {
  const std::string url = durable::testing::database_url();
  const std::string schema = "durable_example_operations";
  durable::testing::drop_schema(url, schema);
  durable::Engine engine({.database_url = url, .schema = schema});
  engine.add<PriceInvoice>().add<AddTax>().add<Invoice>();
  engine.start();

  for (int i = 1; i <= 3; ++i) {
    try {
      engine.start_workflow<Invoice>(fmt::format("invoice-{}", i), i).result(30s);
    } catch (const durable::WorkflowFailed& e) {
      fmt::print("invoice-{} failed: {}\n", i, e.what());
    }
  }

  // [list-failed]
  durable::Runs& runs = engine.runs();
  durable::RunPage failed =
      runs.list({.filter = {.statuses = {durable::WorkflowStatus::failed}, .workflow_name = "invoice"}, .limit = 50});
  for (const durable::RunSummary& run : failed.runs) {
    fmt::print("failed: {} (run {})\n", run.workflow_id, run.run_id);
  }
  // [list-failed]
  bool ok = failed.runs.size() == 3;

  // [history]
  durable::History history = runs.history(failed.runs.front().run_id);
  for (const durable::HistoryEvent& e : history.events) fmt::print("  #{} {} {}\n", e.seq, e.kind, e.name);
  for (const durable::ActivityAttempt& a : history.attempts) {
    fmt::print("  step {} {} attempt {}: {} {}\n", a.step, a.activity, a.attempt, a.outcome, a.error_message);
  }
  // [history]

  tax_service_up = true;  // the operator fixes the cause ...
  // [resume-fork]
  const durable::OperatorAction action{.actor = "ops@example.com", .reason = "tax service restored (INC-4711)"};
  // ... resumes one run: its failed step gets new attempts; step 0 is not run again.
  durable::WorkflowHandle<int> resumed(runs.resume(failed.runs[0].run_id, action));
  // ... and forks another from step 1, under a new id: step 0's result is copied from its journal.
  durable::WorkflowHandle<int> forked(
      runs.fork(failed.runs[1].run_id, 1, action, {.workflow_id = failed.runs[1].workflow_id.str() + "-retry"}));
  // [resume-fork]
  const int resumed_total = resumed.result(30s), forked_total = forked.result(30s);
  fmt::print("resumed {} -> {}, forked {} -> {}\n", resumed.id(), resumed_total, forked.id(), forked_total);
  ok = ok && resumed.id() == "invoice-3" && resumed_total == 360 && forked.id() == "invoice-2-retry" &&
       forked_total == 240;

  auto counts = runs.count_by_status({.workflow_name = "invoice"});
  fmt::print("invoices: {} completed, {} failed\n", counts[durable::WorkflowStatus::completed],
             counts[durable::WorkflowStatus::failed]);
  ok = ok && counts[durable::WorkflowStatus::completed] == 2 && counts[durable::WorkflowStatus::failed] == 2;

  // [prune-audit]
  // Delete every run that ended before now, with its history (a retention job would pass now - 30 days).
  durable::PruneOutcome pruned = runs.prune(std::chrono::system_clock::now() + 1s, action);
  fmt::print("pruned {} runs in {} batch(es)\n", pruned.runs, pruned.batches);
  for (const durable::AuditEntry& entry : runs.audit()) {
    fmt::print("audit #{}: {} by {} on '{}': {}\n", entry.id, entry.action, entry.actor, entry.workflow_id,
               entry.reason);
  }
  // [prune-audit]
  ok = ok && pruned.runs == 4 && runs.audit().size() == 3;

  engine.stop();
  durable::testing::drop_schema(url, schema);
  fmt::print("operations example: {}\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
