// Approval: an expense waits for a manager's approval message, with a 24 hour deadline. A
// second engine (standing in for another service) sends the approval; then a second expense
// nobody answers is escalated once the deadline passes, skipped to with the test clock. A third,
// waiting on a decision, a withdrawal or the deadline with wait_any, is withdrawn.
//
// Run: build/examples/08-approval   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

using namespace std::chrono_literals;

struct Expense {
  std::string employee;
  int amount = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Expense, employee, amount)

struct Decision {
  bool approved = false;
  std::string by;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Decision, approved, by)

struct PayOut {
  static constexpr auto name = "pay_out";
  std::string operator()(durable::ActivityContext&, const Expense& e) const {
    return fmt::format("paid {} to {}", e.amount, e.employee);
  }
};

struct Escalate {
  static constexpr auto name = "escalate";
  std::string operator()(durable::ActivityContext&, const Expense& e) const {
    return fmt::format("escalated {}'s expense of {} to finance", e.employee, e.amount);
  }
};

// [workflow]
struct ExpenseApproval {
  static constexpr auto name = "expense_approval";
  std::string operator()(durable::WorkflowContext& ctx, const Expense& expense) {
    ctx.set_event("status", std::string("waiting for a decision"));  // anyone may read it
    // Waits durably: engines may restart meanwhile; the deadline is on the database clock.
    std::optional<Decision> decision = ctx.receive<Decision>("decision", 24h);
    if (!decision) return ctx.call<Escalate>(expense);
    if (!decision->approved) return "rejected by " + decision->by;
    return ctx.call<PayOut>(expense) + ", approved by " + decision->by;
  }
};
// [workflow]

// [wait_any]
// The same, but the employee may withdraw the expense while it waits: the first of three.
struct WithdrawableExpense {
  static constexpr auto name = "withdrawable_expense";
  std::string operator()(durable::WorkflowContext& ctx, const Expense& expense) {
    auto decision = ctx.start_receive<Decision>("decision");
    auto withdrawal = ctx.start_receive<std::string>("withdraw");
    auto deadline = ctx.start_timer(24h);
    switch (ctx.wait_any(decision, withdrawal, deadline)) {
      case 0: {
        const Decision d = decision.get();
        return d.approved ? ctx.call<PayOut>(expense) + ", approved by " + d.by : "rejected by " + d.by;
      }
      case 1: return "withdrawn: " + withdrawal.get();
      default: return ctx.call<Escalate>(expense);
    }
  }
};
// [wait_any]

int main() {
  const std::string url = durable::testing::database_url();
  const std::string schema = "durable_example_approval";
  durable::testing::drop_schema(url, schema);
  durable::Engine worker({.database_url = url, .schema = schema});
  worker.add<ExpenseApproval>().add<WithdrawableExpense>().add<PayOut>().add<Escalate>();
  worker.start();

  auto first = worker.start_workflow<ExpenseApproval>("expense-1", {"ana", 120});
  auto second = worker.start_workflow<ExpenseApproval>("expense-2", {"bo", 80});

  // Another service's engine, which runs nothing here: it only sends.
  // [send]
  durable::Engine approvals({.database_url = url, .schema = schema});
  approvals.send("expense-1", "decision", Decision{true, "carla"});
  // [send]
  fmt::print("expense-1: {}\n", first.result(30s));

  auto third = worker.start_workflow<WithdrawableExpense>("expense-3", {"dev", 300});
  approvals.send("expense-3", "withdraw", std::string("booked twice"));
  const std::string withdrawn = third.result(30s);
  fmt::print("expense-3: {}\n", withdrawn);

  // Nobody answers expense-2: once it waits (its deadline set), skip the database clock past it.
  fmt::print("expense-2: {}\n", second.get_event<std::string>("status", 30s).value_or("?"));
  durable::testing::advance_clock(url, schema, 25h);
  const std::string escalated = second.result(30s);
  fmt::print("expense-2: {}\n", escalated);

  // A decision that comes too late is refused with a typed error, and nothing is written.
  try {
    approvals.send("expense-2", "decision", Decision{true, "carla"});
    return 1;
  } catch (const durable::WorkflowEnded& e) {
    fmt::print("late decision refused: {}\n", e.what());
  }
  worker.stop();
  durable::testing::drop_schema(url, schema);
  return escalated.starts_with("escalated bo's expense") && withdrawn == "withdrawn: booked twice" ? 0 : 1;
}
