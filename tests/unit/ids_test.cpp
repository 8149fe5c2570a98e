#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <durable/engine.hpp>
#include <durable/ids.hpp>
#include <durable/runs.hpp>

using durable::RunId;
using durable::WorkflowId;

namespace {

// Neither id passes for the other, and text makes a workflow id but never a run id by itself.
static_assert(!std::is_convertible_v<RunId, WorkflowId>);
static_assert(!std::is_convertible_v<WorkflowId, RunId>);
static_assert(!std::is_convertible_v<std::string, RunId>);
static_assert(!std::is_convertible_v<const char*, RunId>);
static_assert(std::is_constructible_v<RunId, std::string>);  // explicitly: RunId{text}
static_assert(std::is_convertible_v<std::string, WorkflowId>);
static_assert(std::is_convertible_v<std::string_view, WorkflowId>);
static_assert(std::is_convertible_v<const char*, WorkflowId>);
static_assert(!std::is_convertible_v<RunId, std::string>);
static_assert(!std::is_convertible_v<WorkflowId, std::string>);

// They compare only with their own kind.
template <typename A, typename B>
concept EqualityComparable = requires(const A& a, const B& b) {
  a == b;
};
template <typename A, typename B>
concept Ordered = requires(const A& a, const B& b) {
  a < b;
};
static_assert(!EqualityComparable<WorkflowId, RunId>);
static_assert(!Ordered<RunId, WorkflowId>);
static_assert(EqualityComparable<WorkflowId, const char*>);  // "order-1" is a workflow id
static_assert(!EqualityComparable<RunId, const char*>);
static_assert(!EqualityComparable<RunId, std::string>);

// The mix-ups they exist for do not compile: a workflow id where a run id is meant, and back.
template <typename Id>
concept RunsGetTakes = requires(const durable::Runs& runs, const Id& id) {
  runs.get(id);
};
template <typename Id>
concept EngineWorkflowTakes = requires(durable::Engine& engine, const Id& id) {
  engine.workflow(id);
};
template <typename Id>
concept WorkflowRunTakes = requires(durable::Engine& engine, const Id& id) {
  engine.workflow_run(id);
};
static_assert(RunsGetTakes<RunId>);
static_assert(!RunsGetTakes<WorkflowId>);
static_assert(!RunsGetTakes<std::string>);
static_assert(EngineWorkflowTakes<WorkflowId>);
static_assert(EngineWorkflowTakes<std::string>);
static_assert(!EngineWorkflowTakes<RunId>);
static_assert(WorkflowRunTakes<RunId>);
static_assert(!WorkflowRunTakes<WorkflowId>);

}  // namespace

TEST_CASE("workflow ids and run ids hold their text and compare by it", "[unit][ids]") {
  const WorkflowId order = "order-1";
  const WorkflowId from_string = std::string("order-1");
  const WorkflowId from_view = std::string_view("order-2");
  CHECK(order.str() == "order-1");
  CHECK(order == from_string);
  CHECK(order == "order-1");
  CHECK("order-1" == order);
  CHECK(order != from_view);
  CHECK(order < from_view);
  CHECK(WorkflowId().empty());
  CHECK_FALSE(order.empty());

  const RunId run{"018f0000-0000-7000-8000-000000000001"};
  const RunId later{std::string("018f0000-0000-7000-8000-000000000002")};
  CHECK(run.str() == "018f0000-0000-7000-8000-000000000001");
  CHECK(run == RunId{"018f0000-0000-7000-8000-000000000001"});
  CHECK(run != later);
  CHECK(run < later);
  CHECK(later > run);
  CHECK((run <=> later) == std::strong_ordering::less);
  CHECK(RunId().empty());
  CHECK(RunId() == RunId{""});
}

TEST_CASE("ids key ordered and hashed containers", "[unit][ids]") {
  const std::set<WorkflowId> ordered{"b", "a", "c", "a"};
  CHECK(std::vector<WorkflowId>(ordered.begin(), ordered.end()) == std::vector<WorkflowId>{"a", "b", "c"});
  std::unordered_map<RunId, int> by_run{{RunId{"r1"}, 1}, {RunId{"r2"}, 2}};
  CHECK(by_run.at(RunId{"r2"}) == 2);
  CHECK(by_run.count(RunId{"r3"}) == 0);
  const std::unordered_set<WorkflowId> seen{"x", "x", "y"};
  CHECK(seen.size() == 2);
  CHECK(std::hash<RunId>{}(RunId{"r1"}) == std::hash<std::string>{}("r1"));
  CHECK(std::hash<WorkflowId>{}("x") == std::hash<std::string>{}("x"));
}

TEST_CASE("ids are JSON strings in payloads, both ways", "[unit][ids]") {
  struct Order {
    WorkflowId parent;
    RunId run;
  };
  const nlohmann::json doc = {{"parent", WorkflowId{"order-1"}}, {"run", RunId{"018f-run"}}};
  CHECK(doc == nlohmann::json::parse(R"({"parent": "order-1", "run": "018f-run"})"));
  const Order back{doc.at("parent").get<WorkflowId>(), doc.at("run").get<RunId>()};
  CHECK(back.parent == "order-1");
  CHECK(back.run == RunId{"018f-run"});
  const std::vector<RunId> runs{RunId{"a"}, RunId{"b"}};
  CHECK(nlohmann::json(runs).dump() == R"(["a","b"])");
  CHECK(nlohmann::json(runs).get<std::vector<RunId>>() == runs);
  CHECK_THROWS_AS(nlohmann::json(42).get<RunId>(), nlohmann::json::type_error);
}

TEST_CASE("ids print as their text, to a stream and through fmt", "[unit][ids]") {
  std::ostringstream out;
  out << WorkflowId{"order-1"} << " " << RunId{"018f-run"};
  CHECK(out.str() == "order-1 018f-run");
  CHECK(fmt::format("{} {}", WorkflowId{"order-1"}, RunId{"018f-run"}) == "order-1 018f-run");
  CHECK(fmt::format("[{:>9}]", RunId{"r1"}) == "[       r1]");
}
