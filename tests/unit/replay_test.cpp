#include <catch2/catch.hpp>

#include "support/expect.hpp"
#include "support/journals.hpp"

#include "base/registry.hpp"
#include "replay/decide.hpp"
#include "replay/replay.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using durable::test::expect_throw;
using namespace durable::detail;

using durable::test::event;

namespace {
Registry test_registry() { return test::echo_and_add(); }
}  // namespace

TEST_CASE("a new activity call becomes a command and suspends the code until its result", "[unit][replay]") {
  Registry registry = test_registry();
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  Replay replay("wf", "hello", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  CHECK_THROWS_AS(ctx.call<test::EchoActivity>("x"), Suspend);
  CHECK(replay.suspended());
  REQUIRE(replay.tasks.size() == 1);
  CHECK(replay.tasks[0].name == "echo");
  CHECK(replay.tasks[0].options.retry.max_attempts == 1);
  CHECK(replay.events[0].kind == journal::EventKind::activity_scheduled);
}

TEST_CASE("a journaled result is returned without scheduling anything", "[unit][replay]") {
  Registry registry = test_registry();
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  journal.apply(event(1, "activity_scheduled", 0, "echo", Json::object()));
  journal.apply(event(2, "activity_completed", 0, "echo", {{"result", "from the journal"}}));
  Replay replay("wf", "hello", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  CHECK(ctx.call<test::EchoActivity>("x") == "from the journal");
  CHECK(replay.tasks.empty());
  CHECK(replay.events.empty());
}

TEST_CASE("asking for another activity than the journal holds is a non-determinism error", "[unit][replay]") {
  Registry registry = test_registry();
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  journal.apply(event(1, "activity_scheduled", 0, "echo", Json::object()));
  Replay replay("wf-7", "hello", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  expect_throw<NonDeterminismError>(
      [&] {
        ctx.call<test::AddActivity>(test::Pair{1, 2});
      },
      "at sequence number 0 the journal holds activity "
      "'echo' but the code asked for activity 'add'");
  // Even if workflow code swallowed the exception, the replay remembers it.
  CHECK(replay.nondeterminism().has_value());
  CHECK(replay.tasks.empty());
}

TEST_CASE("a timer instead of an activity is a non-determinism error too", "[unit][replay]") {
  Registry registry = test_registry();
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  journal.apply(event(1, "activity_scheduled", 0, "echo", Json::object()));
  Replay replay("wf", "hello", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  expect_throw<NonDeterminismError>([&] { ctx.sleep(std::chrono::seconds{1}); }, "asked for a timer");
}

TEST_CASE("a journaled timer fires once the claim's clock passes it", "[unit][replay]") {
  Registry registry = test_registry();
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  journal.apply(event(1, "timer_started", 0, "", {{"fire_at_us", 5000}}));
  {
    Replay early("wf", "w", journal, 4999, registry);
    WorkflowContext ctx = early.context();
    CHECK_THROWS_AS(ctx.sleep(std::chrono::seconds{1}), Suspend);
    CHECK(early.wake_at_us() == 5000);
  }
  Replay due("wf", "w", journal, 5000, registry);
  WorkflowContext ctx = due.context();
  CHECK_NOTHROW(ctx.sleep(std::chrono::seconds{1}));
  REQUIRE(due.events.size() == 1);
  CHECK(due.events[0].kind == journal::EventKind::timer_fired);
  CHECK(due.wake_at_us() == -1);
}

TEST_CASE("a journal with a gap is refused", "[unit][replay]") {
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  CHECK_THROWS_AS(journal.apply(event(2, "activity_scheduled", 0, "echo", Json::object())), Error);
}

TEST_CASE("receives replay from the journal: once received, timed out, or waiting with or without a deadline",
          "[unit][replay][messages]") {
  Registry registry = test_registry();
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  journal.apply(event(1, "message_received", 0, "go", {{"payload", "first"}, {"message_id", "m"}, {"seq", 1}}));
  journal.apply(event(2, "receive_started", 1, "go", {{"fire_at_us", 5000}}));
  journal.apply(event(3, "receive_timed_out", 1, "go", Json::object()));
  {
    Replay replay("wf", "hello", journal, 1000, registry);
    WorkflowContext ctx = replay.context();
    CHECK(ctx.receive<std::string>("go") == "first");  // found at once: no deadline in the journal
    CHECK(ctx.receive<std::string>("go", std::chrono::seconds{5}) == std::nullopt);
    CHECK(replay.events.empty());
    CHECK(replay.received.empty());  // nothing taken from the inbox again
  }
  {
    // The code changed to wait without a deadline where the journal timed out: not replayable.
    Replay replay("wf-8", "hello", journal, 1000, registry);
    WorkflowContext ctx = replay.context();
    CHECK(ctx.receive<std::string>("go") == "first");
    expect_throw<NonDeterminismError>([&] { (void)ctx.receive<std::string>("go"); }, "sequence number 1",
                                      "receive('go') with a deadline");
    CHECK(replay.nondeterminism());
  }
  {
    // Another topic at a journaled receive is a non-determinism error like any other call.
    Replay replay("wf-9", "hello", journal, 1000, registry);
    WorkflowContext ctx = replay.context();
    expect_throw<NonDeterminismError>([&] { (void)ctx.receive<std::string>("other"); }, "receive('go')",
                                      "receive('other')");
  }
}

TEST_CASE("a receive reached before its inbox was read asks for the topic and commits nothing",
          "[unit][replay][messages]") {
  Registry registry = test_registry();
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  Replay unread("wf", "hello", journal, 1000, registry);
  WorkflowContext ctx = unread.context();
  CHECK_THROWS_AS(ctx.receive<std::string>("go", std::chrono::seconds{1}), Suspend);
  CHECK(unread.wanted_topics == std::set<std::string>{"go"});
  CHECK(unread.events.empty());

  Inbox inbox;
  inbox.topics["go"] = {{{3, 900, "m-3", "hello"}, {4, 950, "m-4", "again"}}, true};
  Replay read("wf", "hello", journal, 1000, registry, inbox);
  WorkflowContext again = read.context();
  CHECK(again.receive<std::string>("go", std::chrono::seconds{1}) == "hello");
  CHECK(again.receive<std::string>("go") == "again");
  CHECK_THROWS_AS(again.receive<std::string>("go", std::chrono::seconds{1}), Suspend);  // none left: it waits
  CHECK(read.wanted_topics.empty());
  CHECK(read.received == std::vector<std::pair<int, int>>{{3, 0}, {4, 1}});
  REQUIRE(read.events.size() == 3);
  CHECK(read.events[2].kind == journal::EventKind::receive_started);
  CHECK(read.events[2].data.at("fire_at_us") == 1000 + 1'000'000);
}

namespace {
// Starts an activity, a 1 s timer and a receive of "go", then waits for the first of them.
std::size_t wait_for_first(WorkflowContext& ctx) {
  auto activity = ctx.start<test::EchoActivity>("x");
  auto timer = ctx.start_timer(std::chrono::seconds{1});
  auto message = ctx.start_receive<std::string>("go");
  return ctx.wait_any(activity, timer, message);
}
void three_futures_started(JournalCache& journal) {
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  journal.apply(event(1, "activity_scheduled", 0, "echo", Json::object()));
  journal.apply(event(2, "timer_started", 1, "", {{"fire_at_us", 5000}}));
  journal.apply(event(3, "receive_started", 2, "go", {{"fire_at_us", -1}}));
}
Inbox inbox_of_go(std::vector<pg::InboxMessage> messages) {
  Inbox inbox;
  inbox.topics["go"] = {std::move(messages), true};
  return inbox;
}
}  // namespace

TEST_CASE("wait_any with nothing ready journals the three starts, wakes for the timer, and chooses nothing",
          "[unit][replay][wait_any]") {
  Registry registry = test_registry();
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  Replay unread("wf", "w", journal, 4000, registry);
  WorkflowContext ctx = unread.context();
  CHECK_THROWS_AS(wait_for_first(ctx), Suspend);
  CHECK(unread.wanted_topics == std::set<std::string>{"go"});  // its inbox is read before choosing

  const Inbox empty = inbox_of_go({});
  Replay replay("wf", "w", journal, 4000, registry, empty);
  WorkflowContext read = replay.context();
  CHECK_THROWS_AS(wait_for_first(read), Suspend);
  CHECK(replay.wanted_topics.empty());
  REQUIRE(replay.events.size() == 3);
  CHECK(replay.events[0].kind == journal::EventKind::activity_scheduled);
  CHECK(replay.events[1].kind == journal::EventKind::timer_started);
  CHECK(replay.events[2].kind == journal::EventKind::receive_started);
  CHECK(replay.tasks.size() == 1);
  CHECK(replay.wake_at_us() == 4000 + 1'000'000);
}

TEST_CASE("wait_any chooses the first ready in the order given and settles only that one", "[unit][replay][wait_any]") {
  Registry registry = test_registry();
  JournalCache journal;
  three_futures_started(journal);
  const Inbox inbox = inbox_of_go({{7, 100, "m-7", "approved"}});
  SECTION("a message sent after the timer's fire time loses to it, and stays in the inbox") {
    const Inbox late = inbox_of_go({{7, 5500, "m-7", "late"}});
    Replay replay("wf", "w", journal, 6000, registry, late);
    WorkflowContext ctx = replay.context();
    CHECK(wait_for_first(ctx) == 1);
    REQUIRE(replay.events.size() == 2);
    CHECK(replay.events[0].kind == journal::EventKind::timer_fired);
    CHECK(replay.events[1].kind == journal::EventKind::wait_chosen);
    CHECK(replay.events[1].step == 3);
    CHECK(replay.events[1].name == "0,1,2");
    CHECK(replay.events[1].data.at("index") == 1);
    CHECK(replay.received.empty());
    CHECK(replay.wake_at_us() == -1);
  }
  SECTION("a message sent before the fire time wins, though the timer comes first in the list") {
    const Inbox in_time = inbox_of_go({{7, 4500, "m-7", "in time"}});
    Replay replay("wf", "w", journal, 6000, registry, in_time);
    WorkflowContext ctx = replay.context();
    CHECK(wait_for_first(ctx) == 2);
    CHECK(replay.received == std::vector<std::pair<int, int>>{{7, 2}});
    CHECK(replay.wake_at_us() == -1);  // the timer is due: only code awaiting it needs it
  }
  SECTION("the timer is not due: the message is taken, and get() returns it without taking another") {
    Replay replay("wf", "w", journal, 4000, registry, inbox);
    WorkflowContext ctx = replay.context();
    auto activity = ctx.start<test::EchoActivity>("x");
    auto timer = ctx.start_timer(std::chrono::seconds{1});
    auto message = ctx.start_receive<std::string>("go");
    CHECK(ctx.wait_any(activity, timer, message) == 2);
    CHECK(message.get() == "approved");
    CHECK(replay.received == std::vector<std::pair<int, int>>{{7, 2}});
    REQUIRE(replay.events.size() == 2);
    CHECK(replay.events[0].kind == journal::EventKind::message_received);
    CHECK(replay.events[1].kind == journal::EventKind::wait_chosen);
    CHECK(replay.wake_at_us() == 5000);  // the timer still counts
  }
  SECTION("the activity finished too: it is first in the list, so it is chosen") {
    journal.apply(event(4, "activity_completed", 0, "echo", {{"result", "done"}}));
    Replay replay("wf", "w", journal, 6000, registry, inbox);
    WorkflowContext ctx = replay.context();
    CHECK(wait_for_first(ctx) == 0);
    REQUIRE(replay.events.size() == 1);  // neither the timer nor the receive was settled
    CHECK(replay.events[0].kind == journal::EventKind::wait_chosen);
  }
}

TEST_CASE("a journaled wait_any choice is replayed even when an earlier future has become ready since",
          "[unit][replay][wait_any]") {
  Registry registry = test_registry();
  JournalCache journal;
  three_futures_started(journal);
  journal.apply(event(4, "timer_fired", 1, "", Json::object()));
  journal.apply(event(5, "wait_chosen", 3, "0,1,2", {{"index", 1}}));
  journal.apply(event(6, "activity_completed", 0, "echo", {{"result", "late"}}));
  const Inbox inbox = inbox_of_go({{7, 100, "m-7", "approved"}});
  Replay replay("wf", "w", journal, 9000, registry, inbox);
  WorkflowContext ctx = replay.context();
  CHECK(wait_for_first(ctx) == 1);
  CHECK(replay.events.empty());
  CHECK(replay.received.empty());

  // Waiting on other futures at that step is a change of code the journal cannot replay.
  Replay changed("wf-2", "w", journal, 9000, registry);
  WorkflowContext other = changed.context();
  auto activity = other.start<test::EchoActivity>("x");
  auto timer = other.start_timer(std::chrono::seconds{1});
  (void)other.start_receive<std::string>("go");
  expect_throw<NonDeterminismError>([&] { (void)other.wait_any(timer, activity); }, "sequence number 3",
                                    "wait_any over steps 0,1,2", "wait_any over steps 1,0");
}

TEST_CASE("wait_any over no futures is refused", "[unit][replay][wait_any]") {
  Registry registry = test_registry();
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  Replay replay("wf-3", "w", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  expect_throw<InvalidArgument>([&] { (void)ctx.wait_any(std::vector<TimerFuture>{}); }, "wf-3", "no futures");
  CHECK(replay.events.empty());
}

namespace {
Registry child_registry() {
  Registry r = test_registry();
  r.workflows.emplace("double", make_workflow<int>("double", [] { return test::DoubleWorkflow{}; }));
  return r;
}
void start(JournalCache& journal, int depth = 0) {
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}, {"depth", depth}}));
}
}  // namespace

TEST_CASE("children's starts go on past ids not read yet, to learn them all in one round", "[unit][replay][children]") {
  Registry registry = child_registry();
  JournalCache journal;
  start(journal);
  Replay replay("parent", "p", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  auto a = ctx.start_child<test::DoubleWorkflow>("a", 1);
  auto b = ctx.start_child<test::DoubleWorkflow>("b", 2);
  CHECK_THROWS_AS(a.get(), Suspend);
  CHECK(replay.wanted_ids == std::set<std::string>{"a", "b"});
  CHECK(replay.children.empty());  // nothing to commit from this replay
  CHECK(replay.events.empty());
}

TEST_CASE("a child under a free id is started and journaled, and one under a taken id throws and is journaled",
          "[unit][replay][children]") {
  Registry registry = child_registry();
  JournalCache journal;
  start(journal, 2);
  ChildIds ids;
  ids.latest["free"] = std::nullopt;
  ids.latest["busy"] = pg::TakenId{"run-busy", journal::RunStatus::running};
  ids.latest["done"] = pg::TakenId{"run-done", journal::RunStatus::completed};
  Replay replay("parent", "p", journal, 1000, registry, Inbox::unread(), ids);
  WorkflowContext ctx = replay.context();
  auto free = ctx.start_child<test::DoubleWorkflow>("free", 1, {.parent_close = ParentClosePolicy::abandon});
  REQUIRE(replay.children.size() == 1);
  CHECK(replay.children[0].workflow_id == "free");
  CHECK(replay.children[0].depth == 3);
  CHECK(replay.children[0].parent_close == "abandon");
  CHECK(replay.events.back().kind == journal::EventKind::child_started);
  CHECK(free.workflow_id() == "free");

  auto busy = expect_throw<WorkflowAlreadyStarted>([&] { ctx.start_child<test::DoubleWorkflow>("busy", 1); });
  CHECK(busy.existing_run_id() == RunId{"run-busy"});
  CHECK(busy.existing_status() == "running");
  CHECK(replay.events.back().kind == journal::EventKind::child_start_failed);
  // Ended: taken under the default policy, room under allow_if_ended.
  CHECK_THROWS_AS(ctx.start_child<test::DoubleWorkflow>("done", 1), WorkflowAlreadyStarted);
  ctx.start_child<test::DoubleWorkflow>("done", 1, {.id_reuse = IdReusePolicy::allow_if_ended});
  CHECK(replay.children.back().replaceable == std::vector<std::string>{"completed", "failed", "cancelled"});
  // A second start under an id this replay started a child under finds it taken.
  CHECK_THROWS_AS(ctx.start_child<test::DoubleWorkflow>("free", 1), WorkflowAlreadyStarted);
  CHECK(replay.children.size() == 2);
  CHECK(replay.wanted_ids.empty());
}

TEST_CASE("journaled children replay: their results, their failures, and a taken id throws again",
          "[unit][replay][children]") {
  Registry registry = child_registry();
  JournalCache journal;
  start(journal);
  journal.apply(
      event(1, "child_start_failed", 0, "double", {{"workflow_id", "x"}, {"run_id", "r0"}, {"status", "failed"}}));
  journal.apply(event(2, "child_started", 1, "double", {{"workflow_id", "y"}, {"run_id", "r1"}}));
  journal.apply(event(3, "child_started", 2, "double", {{"workflow_id", "z"}, {"run_id", "r2"}}));
  journal.apply(event(4, "child_completed", 1, "double", {{"result", 14}}));
  journal.apply(
      event(5, "child_failed", 2, "double",
            {{"status", "cancelled"}, {"error_type", "durable::WorkflowCancelled"}, {"error_message", "gone"}}));
  Replay replay("parent", "p", journal, 1000, registry);  // no ids read: none are needed
  WorkflowContext ctx = replay.context();
  auto taken = expect_throw<WorkflowAlreadyStarted>([&] { ctx.start_child<test::DoubleWorkflow>("x", 1); });
  CHECK(taken.existing_run_id() == RunId{"r0"});
  CHECK(ctx.call_child<test::DoubleWorkflow>("y", 7) == 14);
  auto failed = expect_throw<ChildWorkflowFailed>([&] { ctx.call_child<test::DoubleWorkflow>("z", 1); });
  CHECK(failed.workflow_id() == "z");
  CHECK(failed.status() == "cancelled");
  CHECK(failed.error_type() == "durable::WorkflowCancelled");
  CHECK(replay.events.empty());
  CHECK(replay.children.empty());
  CHECK(replay.wanted_ids.empty());
}

TEST_CASE("a child under another id than the journal holds is a non-determinism error", "[unit][replay][children]") {
  Registry registry = child_registry();
  JournalCache journal;
  start(journal);
  journal.apply(event(1, "child_started", 0, "double", {{"workflow_id", "y"}, {"run_id", "r1"}}));
  Replay replay("parent", "p", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  expect_throw<NonDeterminismError>([&] { ctx.start_child<test::DoubleWorkflow>("other", 1); },
                                    "journal holds a child 'double' under id 'y'");
}

TEST_CASE("starting a child at the depth limit, or with bad input, throws, starts nothing and journals the refusal",
          "[unit][replay][children][bad_input]") {
  Registry registry = child_registry();
  JournalCache deep;
  start(deep, max_child_depth);
  Replay replay("deep", "p", deep, 1000, registry);
  WorkflowContext ctx = replay.context();
  expect_throw<ChildDepthExceeded>([&] { ctx.start_child<test::DoubleWorkflow>("a", 1); }, "nested 32 deep");
  REQUIRE(replay.events.size() == 1);
  CHECK(replay.events[0].kind == journal::EventKind::call_refused);
  CHECK(replay.events[0].data.at("error_type") == "durable::ChildDepthExceeded");
  CHECK(replay.children.empty());

  JournalCache journal;
  start(journal);
  Replay other("p", "p", journal, 1000, registry);
  WorkflowContext ctx2 = other.context();
  // An id that is no id is refused before the call takes a step: nothing to journal.
  CHECK_THROWS_AS(ctx2.start_child<test::DoubleWorkflow>("", 1), InvalidWorkflowId);
  CHECK_THROWS_AS(ctx2.start_child(WorkflowRef<int, int>{"nope"}, "a", 1), UnknownWorkflow);
  CHECK_THROWS_AS(ctx2.start_child(WorkflowRef<std::string, int>{"double"}, "b", "not a number"), PayloadError);
  REQUIRE(other.events.size() == 2);
  CHECK(other.events[0].kind == journal::EventKind::call_refused);
  CHECK(other.events[0].step == 0);
  CHECK(other.events[0].data == Json{{"call", "child"},
                                     {"workflow_id", "a"},
                                     {"error_type", "durable::UnknownWorkflow"},
                                     {"error_message", other.events[0].data.at("error_message")}});
  CHECK(other.events[1].step == 1);
  CHECK(other.events[1].data.at("workflow_id") == "b");
  CHECK(other.children.empty());
  CHECK(other.wanted_ids.empty());
}

namespace {
const ActivityRef<std::string, std::string> not_registered{"not_registered"};
// Code that catches a refused activity call and goes on: the refusal keeps step 0.
std::string catches_refusal(WorkflowContext& ctx) {
  std::string seen;
  try {
    ctx.call(not_registered, "x");
  } catch (const UnknownActivity&) {
    seen = "refused; ";
  }
  return seen + ctx.call<test::EchoActivity>("y");
}
}  // namespace

TEST_CASE("a refused activity call takes its step and is journaled, so the code goes on at the next step",
          "[unit][replay][bad_input]") {
  Registry registry = test_registry();
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  Replay replay("wf", "w", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  CHECK_THROWS_AS(catches_refusal(ctx), Suspend);
  REQUIRE(replay.events.size() == 2);
  CHECK(replay.events[0].kind == journal::EventKind::call_refused);
  CHECK(replay.events[0].step == 0);
  CHECK(replay.events[0].name == "not_registered");
  CHECK(replay.events[0].data.at("call") == "activity");
  CHECK(replay.events[0].data.at("error_type") == "durable::UnknownActivity");
  CHECK(replay.events[1].kind == journal::EventKind::activity_scheduled);
  CHECK(replay.events[1].step == 1);
  REQUIRE(replay.tasks.size() == 1);
  CHECK(replay.tasks[0].step == 1);
}

TEST_CASE("an activity whose idempotency key function throws refuses the call the same way",
          "[unit][replay][bad_input]") {
  Registry registry = test_registry();
  ActivityDefinition keyless = registry.activities.at("echo");
  keyless.name = "not_registered";
  keyless.key_of = [](const Json&) -> std::optional<std::string> { throw std::runtime_error("no key for it"); };
  registry.activities.emplace("not_registered", std::move(keyless));
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  Replay replay("wf", "w", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  std::string seen;
  try {
    ctx.call(not_registered, "x");
  } catch (const std::runtime_error& e) {
    seen = e.what();
  }
  CHECK(seen == "no key for it");
  CHECK_THROWS_AS(ctx.call<test::EchoActivity>("y"), Suspend);
  REQUIRE(replay.events.size() == 2);
  CHECK(replay.events[0].kind == journal::EventKind::call_refused);
  CHECK(replay.events[0].data.at("error_type") == "std::runtime_error");
  CHECK(replay.events[1].step == 1);
}

TEST_CASE("a journaled refusal is refused again on replay, and code that accepts the call now diverges",
          "[unit][replay][bad_input]") {
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  journal.apply(event(1, "call_refused", 0, "not_registered",
                      {{"call", "activity"}, {"error_type", "durable::UnknownActivity"}, {"error_message", "..."}}));
  journal.apply(event(2, "activity_scheduled", 1, "echo", Json::object()));
  journal.apply(event(3, "activity_completed", 1, "echo", {{"result", "from the journal"}}));
  REQUIRE(journal.steps.size() == 2);
  CHECK(journal.steps[0].refused);

  Registry same = test_registry();
  Replay replay("wf", "w", journal, 1000, same);
  WorkflowContext ctx = replay.context();
  CHECK(catches_refusal(ctx) == "refused; from the journal");
  CHECK(replay.events.empty());
  CHECK(replay.tasks.empty());

  // A build that registers the activity accepts the call the run saw refused: it changed.
  Registry fixed = test_registry();
  fixed.activities.emplace("not_registered", fixed.activities.at("echo"));
  Replay changed("wf", "w", journal, 1000, fixed);
  WorkflowContext ctx2 = changed.context();
  expect_throw<NonDeterminismError>(
      [&] { catches_refusal(ctx2); },
      "the journal holds activity 'not_registered', refused when the run first called it "
      "(durable::UnknownActivity) but the code asked for activity 'not_registered', which "
      "this code accepts");
  CHECK(changed.tasks.empty());
}

TEST_CASE("a resume voids the refusal that ended the run, and only that one", "[unit][replay][bad_input]") {
  JournalCache journal;
  journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  journal.apply(event(1, "call_refused", 0, "not_registered", {{"call", "activity"}, {"error_type", "t"}}));
  journal.apply(event(2, "workflow_failed", -1, "", Json::object()));
  journal.apply(event(3, "workflow_resumed", -1, "", {{"retry_steps", {0}}}));
  CHECK(journal.steps.empty());  // the call is new ground again
  journal.apply(event(4, "activity_scheduled", 0, "not_registered", Json::object()));
  CHECK(journal.steps.size() == 1);

  JournalCache caught;
  caught.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  caught.apply(event(1, "call_refused", 0, "not_registered", {{"call", "activity"}, {"error_type", "t"}}));
  caught.apply(event(2, "activity_scheduled", 1, "echo", Json::object()));
  CHECK_THROWS_AS(caught.apply(event(3, "workflow_resumed", -1, "", {{"retry_steps", {0}}})), Error);

  JournalCache odd;
  odd.apply(event(0, "workflow_started", -1, "", {{"input", "x"}}));
  expect_throw<Error>(
      [&] {
        odd.apply(event(1, "call_refused", 0, "x", {{"call", "timer"}}));
      },
      "names a call 'timer', neither activity nor child");
}

namespace {
// The refund workflow of the cancellation tests, in short: an activity, and on a cancel another.
std::string refunding(WorkflowContext& ctx, bool swallow) {
  try {
    return ctx.call<test::EchoActivity>("charge");
  } catch (const WorkflowCancelled& e) {
    ctx.call<test::EchoActivity>("refund");
    if (swallow) return "refunded: " + e.reason();
    throw;
  }
}
Registry registry_with_refunding(const Registry& base, bool swallow) {
  Registry r = base;
  WorkflowDefinition def;
  def.name = "refunding";
  def.run = [swallow](WorkflowContext& ctx, const Json&) -> Json { return refunding(ctx, swallow); };
  def.check_input = [](const Json&) {};
  r.workflows.emplace("refunding", std::move(def));
  return r;
}
}  // namespace

TEST_CASE("a requested cancel is thrown at the current await, journaled, and replayed at the same place",
          "[unit][replay][cancel]") {
  Registry registry = test_registry();
  JournalCache journal;
  journal.name = "refunding";
  start(journal);
  journal.apply(event(1, "activity_scheduled", 0, "echo", Json::object()));
  journal.apply(event(2, "cancel_requested", -1, "", {{"reason", "why not"}}));
  {
    Replay replay("wf", "refunding", journal, 1000, registry);
    WorkflowContext ctx = replay.context();
    CHECK_THROWS_AS(refunding(ctx, false), Suspend);  // waits for the refund
    CHECK(replay.cancel_thrown());
    CHECK(replay.dropped == std::vector<int>{0});
    REQUIRE(replay.events.size() == 2);
    CHECK(replay.events[0].kind == journal::EventKind::cancel_delivered);
    CHECK(replay.events[0].data == Json{{"at_step", 1}, {"awaited", 0}, {"dropped", {0}}});
    CHECK(replay.events[1].kind == journal::EventKind::activity_scheduled);  // the refund, at step 1
    REQUIRE(replay.tasks.size() == 1);
    CHECK(replay.tasks[0].step == 1);
    journal.apply(event(3, "cancel_delivered", -1, "", replay.events[0].data));
    journal.apply(event(4, "activity_scheduled", 1, "echo", Json::object()));
  }
  // The charge's outcome came in late: the run gave up on it, so it does not count.
  journal.apply(event(5, "activity_completed", 0, "echo", {{"result", "charged after all"}}));
  journal.apply(event(6, "activity_completed", 1, "echo", {{"result", "refund"}}));
  Replay replay("wf", "refunding", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  auto e = expect_throw<WorkflowCancelled>([&] { refunding(ctx, false); }, "why not");
  CHECK(e.reason() == "why not");
  CHECK(replay.events.empty());
  CHECK(replay.tasks.empty());

  // Decided as a whole: the cancel escaped, so the run ends cancelled with the reason.
  Decisions d = decide(registry_with_refunding(registry, false), journal, "wf", 1000);
  CHECK(d.status == journal::RunStatus::cancelled);
  CHECK(d.error_message == "why not");
  CHECK(d.events.back().kind == journal::EventKind::workflow_cancelled);
  Decisions swallowed = decide(registry_with_refunding(registry, true), journal, "wf", 1000);
  CHECK(swallowed.status == journal::RunStatus::completed);
  CHECK(swallowed.result == "refunded: why not");
}

TEST_CASE("a cancel requested before the code began is thrown at its first call", "[unit][replay][cancel]") {
  Registry registry = test_registry();
  JournalCache journal;
  start(journal);
  journal.apply(event(1, "cancel_requested", -1, "", {{"reason", ""}}));
  Replay replay("wf", "refunding", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  CHECK_THROWS_AS(refunding(ctx, false), Suspend);
  CHECK(replay.dropped.empty());
  REQUIRE(replay.events.size() == 2);
  CHECK(replay.events[0].data == Json{{"at_step", 0}, {"awaited", -1}, {"dropped", Json::array()}});
  CHECK(replay.tasks.size() == 1);  // the refund only: the charge was never scheduled
  CHECK(replay.tasks[0].input == "refund");
}
