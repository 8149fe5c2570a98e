// Children: an order starts one child workflow per warehouse and collects their results; the
// Lyon warehouse is out of stock, so its child fails and the order catches ChildWorkflowFailed.
// The order then refunds the missing items under the refund's own id, which support has used
// already, so the start throws WorkflowAlreadyStarted and nothing is refunded twice. A courier
// child that nobody picks up loses a wait_any to a 48 hour deadline and is cancelled when the
// order ends. A follow-up child started with ParentClosePolicy::abandon outlives the order.
//
// Run: build/examples/09-children   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <map>
#include <stdexcept>
#include <vector>

using namespace std::chrono_literals;

struct Shipment {
  std::string order;
  std::string warehouse;
  std::vector<std::string> items;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Shipment, order, warehouse, items)

struct Order {
  std::string id;
  std::map<std::string, std::vector<std::string>> items_by_warehouse;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Order, id, items_by_warehouse)

struct OrderReport {
  std::vector<std::string> shipped, failed;
  std::string refund, courier;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OrderReport, shipped, failed, refund, courier)

struct ReserveStock {
  static constexpr auto name = "reserve_stock";
  int operator()(durable::ActivityContext&, const Shipment& s) const {
    if (s.warehouse == "lyon") throw std::runtime_error("out of stock: " + s.items.front());
    return static_cast<int>(s.items.size());
  }
};

struct BookCarrier {
  static constexpr auto name = "book_carrier";
  std::string operator()(durable::ActivityContext&, const Shipment& s) const {
    return fmt::format("TRK-{}-{}", s.warehouse, s.items.size());
  }
};

struct PayBack {
  static constexpr auto name = "pay_back";
  std::string operator()(durable::ActivityContext&, const std::vector<Shipment>& missing) const {
    std::size_t items = 0;
    for (const Shipment& s : missing) items += s.items.size();
    return fmt::format("refunded {} item(s) of {}", items, missing.front().order);
  }
};

struct SendSurvey {
  static constexpr auto name = "send_survey";
  std::string operator()(durable::ActivityContext&, const std::string& order) const {
    return "survey sent for " + order;
  }
};

// [child]
// The child: one per warehouse. A workflow like any other; it does not know it has a parent.
struct ShipFromWarehouse {
  static constexpr auto name = "ship_from_warehouse";
  std::string operator()(durable::WorkflowContext& ctx, const Shipment& shipment) {
    ctx.call<ReserveStock>(shipment);  // throws for Lyon: the child fails with ActivityFailed
    return shipment.warehouse + ": " + ctx.call<BookCarrier>(shipment);
  }
};
// [child]

struct Refund {
  static constexpr auto name = "refund";
  std::string operator()(durable::WorkflowContext& ctx, const std::vector<Shipment>& missing) {
    return ctx.call<PayBack>(missing);
  }
};

struct Courier {  // waits until the courier says it picked the parcels up
  static constexpr auto name = "courier";
  std::string operator()(durable::WorkflowContext& ctx, const std::string& order) {
    return order + " picked up by " + ctx.receive<std::string>("picked_up");
  }
};

struct FollowUp {  // a week after the order, asks the customer how it went
  static constexpr auto name = "follow_up";
  std::string operator()(durable::WorkflowContext& ctx, const std::string& order) {
    ctx.set_event("stage", std::string("waiting a week"));  // commits with the sleep's timer
    ctx.sleep(7 * 24h);
    return ctx.call<SendSurvey>(order);
  }
};

// [parent]
struct FulfilOrder {
  static constexpr auto name = "fulfil_order";
  OrderReport operator()(durable::WorkflowContext& ctx, const Order& order) {
    // Start every child before awaiting any: they run at once, on any engine that runs them.
    std::vector<Shipment> parts;
    std::vector<durable::ChildFuture<std::string>> shipments;
    for (const auto& [warehouse, items] : order.items_by_warehouse) {
      parts.push_back(Shipment{order.id, warehouse, items});
      shipments.push_back(ctx.start_child<ShipFromWarehouse>(order.id + "/ship/" + warehouse, parts.back()));
    }
    OrderReport report;
    std::vector<Shipment> missing;
    for (std::size_t i = 0; i < shipments.size(); ++i) {
      try {
        report.shipped.push_back(shipments[i].get());
      } catch (const durable::ChildWorkflowFailed& e) {  // one warehouse failing does not fail the order
        report.failed.push_back(fmt::format("{}: {}: {}", e.workflow_id(), e.error_type(), e.error_message()));
        missing.push_back(parts[i]);
      }
    }
    // One refund per order, whoever starts it: the id says so.
    if (!missing.empty()) {
      try {
        report.refund = ctx.call_child<Refund>("refund:" + order.id, missing);
      } catch (const durable::WorkflowAlreadyStarted& e) {
        report.refund = "refund already " + e.existing_status() + " (run " + e.existing_run_id().str() + ")";
      }
    }
    // The first of a courier's pick-up and a 48 hour deadline.
    ctx.set_event("stage", std::string("waiting for a courier"));
    auto courier = ctx.start_child<Courier>(order.id + "/courier", order.id);
    auto deadline = ctx.start_timer(48h);
    report.courier = ctx.wait_any(courier, deadline) == 0 ? courier.get() : "no courier within 48 h: sent by post";
    // Runs on by itself after the order has ended; the courier is cancelled when the order ends.
    ctx.start_child<FollowUp>(order.id + "/follow-up", order.id, {.parent_close = durable::ParentClosePolicy::abandon});
    return report;
  }
};
// [parent]

int main() {
  const std::string url = durable::testing::database_url();
  const std::string schema = "durable_example_children";
  durable::testing::drop_schema(url, schema);
  durable::Engine engine({.database_url = url, .schema = schema});
  // [register]
  // Children are registered like any workflow, on the parent's engine too: it checks their input.
  engine.add<FulfilOrder>().add<ShipFromWarehouse>().add<Refund>().add<Courier>().add<FollowUp>();
  engine.add<ReserveStock>().add<BookCarrier>().add<PayBack>().add<SendSurvey>();
  // [register]
  engine.start();

  // [support]
  // Support refunded the Lyon items by hand, under the id the order uses for its refund.
  const std::vector<Shipment> lyon{{"order-7", "lyon", {"olive oil"}}};
  const std::string by_support = engine.start_workflow<Refund>("refund:order-7", lyon).result(30s);
  // [support]
  fmt::print("support: {}\n", by_support);

  const Order order{"order-7", {{"berlin", {"coffee", "tea"}}, {"lyon", {"olive oil"}}}};
  auto run = engine.start_workflow<FulfilOrder>("order-7", order);
  // Nobody picks the parcels up: once the order waits, skip the database clock past the deadline.
  fmt::print("order-7: {}\n", run.get_event<std::string>("stage", 30s).value_or("?"));
  durable::testing::advance_clock(url, schema, 49h);
  const OrderReport report = run.result(30s);
  for (const auto& s : report.shipped) fmt::print("shipped {}\n", s);
  for (const auto& f : report.failed) fmt::print("failed {}\n", f);
  fmt::print("{}\n{}\n", report.refund, report.courier);

  bool courier_cancelled = false;
  try {
    engine.workflow<Courier>("order-7/courier").result(30s);
  } catch (const durable::WorkflowCancelled&) {
    courier_cancelled = true;
  }
  fmt::print("courier child cancelled with its parent: {}\n", courier_cancelled);

  // [children]
  // The order's children, from the management API (any process can ask).
  durable::RunPage children = engine.runs().list({.filter = {.parent_run_id = run.run_id()}});
  for (const durable::RunSummary& child : children.runs) {
    fmt::print("child {} ({}): {}, started by {}\n", child.workflow_id, child.workflow_name,
               durable::to_string(child.status), durable::to_string(child.started_by));
  }
  // [children]

  // [abandoned]
  // The follow-up outlived the order: once it sleeps, a week later (by the test clock) it sends the survey.
  auto follow_up_run = engine.workflow<FollowUp>("order-7/follow-up");
  fmt::print("follow-up: {}\n", follow_up_run.get_event<std::string>("stage", 30s).value_or("?"));
  durable::testing::advance_clock(url, schema, 8 * 24h);
  const std::string survey = follow_up_run.result(30s);
  const durable::RunInfo follow_up = engine.runs().latest("order-7/follow-up");  // still names its parent
  // [abandoned]
  fmt::print("follow-up: {}\n", survey);
  fmt::print("follow-up's parent is the order's run: {}\n", follow_up.parent_run_id == run.run_id());

  engine.stop();
  durable::testing::drop_schema(url, schema);
  const bool ok = report.shipped == std::vector<std::string>{"berlin: TRK-berlin-2"} && report.failed.size() == 1 &&
                  report.failed[0].find("out of stock: olive oil") != std::string::npos &&
                  report.refund.starts_with("refund already completed") &&
                  report.courier == "no courier within 48 h: sent by post" && courier_cancelled &&
                  children.runs.size() == 4 && survey == "survey sent for order-7" &&
                  follow_up.parent_run_id == run.run_id();
  return ok ? 0 : 1;
}
