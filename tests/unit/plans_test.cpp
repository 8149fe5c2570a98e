// Resume and fork planned from a journal alone (replay/plans.hpp), with no database.
#include <catch2/catch.hpp>

#include "durable/errors.hpp"
#include "replay/plans.hpp"
#include "support/journals.hpp"

using namespace durable;
using namespace durable::detail;
using test::event;

namespace {

const Json started = {{"input", "x"}};
const Json failure = {{"error_type", "E"}, {"error_message", "boom"}, {"attempts", 3}};

// A run whose step 0 (echo) completed and step 1 (add) failed, ending the run.
std::vector<pg::JournalEvent> failed_at_last_step() {
  return {event(0, "workflow_started", -1, "", started),
          event(1, "activity_scheduled", 0, "echo", {{"input", "a"}}),
          event(2, "activity_completed", 0, "echo", {{"result", "a"}, {"attempts", 1}}),
          event(3, "activity_scheduled", 1, "add", {{"input", {{"a", 1}, {"b", 2}}}}),
          event(4, "activity_failed", 1, "add", failure),
          event(5, "workflow_failed", -1, "", {{"error_type", "E"}, {"error_message", "boom"}})};
}

}  // namespace

TEST_CASE("a resume retries a failure the code did nothing after, and no step before it", "[unit][plans]") {
  const ResumePlan plan = plan_resume("r", failed_at_last_step());
  CHECK(plan.retry_steps == std::vector<int>{1});
  CHECK(plan.reopen_steps.empty());
  CHECK(plan.journal_length == 6);
}

TEST_CASE("a resume is refused when the code opened a step after the failure", "[unit][plans]") {
  auto events = failed_at_last_step();
  events.pop_back();  // it caught the failure and slept, then failed for another reason
  events.push_back(event(5, "timer_started", 2, "", {{"fire_at_us", 1}}));
  events.push_back(event(6, "timer_fired", 2, ""));
  events.push_back(event(7, "workflow_failed", -1, "", {{"error_type", "F"}, {"error_message", "later"}}));
  CHECK_THROWS_MATCHES(plan_resume("r", events), InvalidRunState,
                       Catch::Message("run r cannot be resumed: its code went on after the failure of step 1 (it "
                                      "opened steps after it), so running that step again could not replay; fork it "
                                      "from step 1 instead"));
}

TEST_CASE("a resume schedules again the activities the run never saw finish", "[unit][plans]") {
  std::vector<pg::JournalEvent> events = {
      event(0, "workflow_started", -1, "", started), event(1, "activity_scheduled", 0, "echo", {{"input", "a"}}),
      event(2, "activity_scheduled", 1, "add", {{"input", {{"a", 1}, {"b", 2}}}}),
      event(3, "activity_failed", 1, "add", failure), event(4, "workflow_failed", -1, "", failure)};
  const ResumePlan plan = plan_resume("r", events);
  CHECK(plan.retry_steps == std::vector<int>{1});
  CHECK(plan.reopen_steps == std::vector<int>{0});  // its task was dropped when the run ended
}

TEST_CASE("a resume voids a refused call that ended the run, and keeps one the code went on from", "[unit][plans]") {
  const Json refused = {{"call", "activity"}, {"error_type", "durable::UnknownActivity"}, {"error_message", "no"}};
  std::vector<pg::JournalEvent> events = {event(0, "workflow_started", -1, "", started),
                                          event(1, "call_refused", 0, "nope", refused),
                                          event(2, "activity_scheduled", 1, "echo", {{"input", "a"}}),
                                          event(3, "activity_completed", 1, "echo", {{"result", "a"}}),
                                          event(4, "call_refused", 2, "nope", refused),
                                          event(5, "workflow_failed", -1, "", failure)};
  const ResumePlan plan = plan_resume("r", events);
  CHECK(plan.retry_steps == std::vector<int>{2});
}

TEST_CASE("a fork copies the run's start and the events of the steps before, and reopens what was open",
          "[unit][plans]") {
  auto events = failed_at_last_step();
  const ForkPlan from_start = plan_fork("r", events, 0);
  REQUIRE(from_start.events.size() == 1);
  CHECK(from_start.events[0]["kind"] == "workflow_started");
  CHECK(from_start.open_steps.empty());

  const ForkPlan after_first = plan_fork("r", events, 1);
  REQUIRE(after_first.events.size() == 3);
  CHECK(after_first.events[2]["kind"] == "activity_completed");
  CHECK(after_first.events[2]["data"]["result"] == "a");

  const ForkPlan at_end = plan_fork("r", events, 2);  // the failure is copied: the copy fails too
  CHECK(at_end.events.size() == 5);
  CHECK(at_end.open_steps.empty());

  events.resize(4);  // step 1 scheduled, not finished: its task runs again in the copy
  CHECK(plan_fork("r", events, 2).open_steps == std::vector<int>{1});
}

TEST_CASE("a fork leaves out the failures a resume voided", "[unit][plans]") {
  auto events = failed_at_last_step();
  events.push_back(
      event(6, "workflow_resumed", -1, "", {{"retry_steps", Json::array({1})}, {"actor", "ops"}, {"reason", "fix"}}));
  events.push_back(event(7, "activity_completed", 1, "add", {{"result", 3}, {"attempts", 4}}));
  const ForkPlan plan = plan_fork("r", events, 2);
  for (const Json& e : plan.events) CHECK(e["kind"] != "activity_failed");
  CHECK(plan.open_steps.empty());
}

TEST_CASE("a fork refuses a step out of range, an empty journal, an open child and a lost input", "[unit][plans]") {
  const auto events = failed_at_last_step();
  CHECK_THROWS_MATCHES(plan_fork("r", events, 3), InvalidArgument,
                       Catch::Message("cannot fork run r from step 3: its journal has steps 0 to 1; give 0 (start "
                                      "over) to 2 (after its last step)"));
  CHECK_THROWS_AS(plan_fork("r", events, -1), InvalidArgument);
  CHECK_THROWS_AS(plan_fork("r", {}, 0), InvalidRunState);

  std::vector<pg::JournalEvent> child = {
      event(0, "workflow_started", -1, "", started),
      event(1, "child_started", 0, "hello", {{"workflow_id", "kid"}, {"run_id", "k1"}, {"input", "x"}})};
  CHECK_THROWS_MATCHES(plan_fork("r", child, 1), InvalidRunState,
                       Catch::Message("cannot fork run r from step 1: its child 'kid' (step 0) had not ended, and it "
                                      "belongs to the source run; fork from step 0 or earlier"));
  CHECK(plan_fork("r", child, 0).events.size() == 1);

  std::vector<pg::JournalEvent> old = {event(0, "workflow_started", -1, "", started),
                                       event(1, "activity_scheduled", 0, "echo", {{"options", Json::object()}})};
  CHECK_THROWS_AS(plan_fork("r", old, 1), InvalidRunState);
}
