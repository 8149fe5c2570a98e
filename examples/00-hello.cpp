// The smallest durable program: one activity, one workflow, one run.
#include <durable/durable.hpp>
#include <durable/testing.hpp>  // only for database_url(): $DURABLE_DATABASE_URL or a throwaway PostgreSQL
#include <iostream>
#include <random>

// [hello]
struct Greet {  // an activity: side effects live here, retried under its policy
  static constexpr auto name = "greet";
  std::string operator()(durable::ActivityContext&, const std::string& who) const { return "hello, " + who; }
};
struct Hello {  // a workflow: deterministic orchestration, every step journaled
  static constexpr auto name = "hello";
  std::string operator()(durable::WorkflowContext& ctx, const std::string& who) { return ctx.call<Greet>(who); }
};

int main() {
  durable::Engine engine({.database_url = durable::testing::database_url(), .schema = "durable_example_hello"});
  engine.add<Greet>().add<Hello>();
  engine.start();
  // The id deduplicates starts: starting "hello-1" twice runs it once. A fresh id per program run:
  auto run = engine.start_workflow<Hello>("hello-" + std::to_string(std::random_device{}()), "world");
  std::cout << run.result() << "\n";  // "hello, world"
}
// [hello]
