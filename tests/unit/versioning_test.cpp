// Patches, replay-safe logging and blocked decisions, against hand-written journals (no database).
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <catch2/catch.hpp>

#include <sstream>

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
Registry echo_registry() { return test::echo_and_add(); }
void start_with_input(JournalCache& journal) { journal.apply(event(0, "workflow_started", -1, "", {{"input", "x"}})); }
// Started, then an echo scheduled and completed with `result` (steps 0, events 0 to 2).
void one_echo_done(JournalCache& journal, const std::string& result) {
  start_with_input(journal);
  journal.apply(event(1, "activity_scheduled", 0, "echo"));
  journal.apply(event(2, "activity_completed", 0, "echo", {{"result", result}}));
}
std::vector<journal::EventKind> kinds(const Replay& replay) {
  std::vector<journal::EventKind> out;
  for (const auto& e : replay.events) out.push_back(e.kind);
  return out;
}
}  // namespace

TEST_CASE("patched on new ground takes the new path and journals a marker that replays say true to",
          "[unit][versioning]") {
  Registry registry = echo_registry();
  JournalCache journal;
  start_with_input(journal);
  {
    Replay replay("wf", "w", journal, 1000, registry);
    WorkflowContext ctx = replay.context();
    CHECK(ctx.patched("charge-first"));
    CHECK(ctx.patched("charge-first"));  // the first answer holds: no second marker
    REQUIRE(replay.events.size() == 1);
    CHECK(replay.events[0].kind == journal::EventKind::patched);
    CHECK(replay.events[0].step == 0);
    CHECK(replay.events[0].name == "charge-first");
    CHECK_THROWS_AS(ctx.call<test::AddActivity>(test::Pair{1, 2}), Suspend);
    CHECK(replay.events.back().step == 1);  // the call after the marker is the next step
  }
  journal.apply(event(1, "patched", 0, "charge-first"));
  journal.apply(event(2, "activity_scheduled", 1, "add"));
  Replay replay("wf", "w", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  CHECK(ctx.patched("charge-first"));
  CHECK_THROWS_AS(ctx.call<test::AddActivity>(test::Pair{1, 2}), Suspend);
  CHECK(replay.events.empty());
  CHECK_FALSE(replay.nondeterminism());
}

TEST_CASE("patched is false for a run journaled past that point without the marker, which keeps its old path",
          "[unit][versioning]") {
  Registry registry = echo_registry();
  JournalCache journal;
  one_echo_done(journal, "old");
  Replay replay("wf", "w", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  REQUIRE_FALSE(ctx.patched("add-first"));
  CHECK(ctx.call<test::EchoActivity>("x") == "old");  // the old path replays
  CHECK_THROWS_AS(ctx.call<test::EchoActivity>("y"), Suspend);
  CHECK(kinds(replay) == std::vector{journal::EventKind::activity_scheduled});  // no marker
  CHECK_FALSE(replay.nondeterminism());
}

TEST_CASE("a run suspended just before the patched point takes the new path when it goes on", "[unit][versioning]") {
  // Old code: echo, then echo. The run waits in the first echo when the patch is deployed.
  Registry registry = echo_registry();
  JournalCache journal;
  one_echo_done(journal, "a");
  Replay replay("wf", "w", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  CHECK(ctx.call<test::EchoActivity>("x") == "a");
  CHECK(ctx.patched("then-add"));  // nothing journaled past here: new ground
  CHECK(kinds(replay) == std::vector{journal::EventKind::patched});
}

TEST_CASE("deprecate_patch takes the new path, passes over an old marker and writes none", "[unit][versioning]") {
  Registry registry = echo_registry();
  {
    JournalCache journal;  // a run of the patched code: marker at step 0
    start_with_input(journal);
    journal.apply(event(1, "patched", 0, "add-first"));
    journal.apply(event(2, "activity_scheduled", 1, "add"));
    Replay replay("wf", "w", journal, 1000, registry);
    WorkflowContext ctx = replay.context();
    ctx.deprecate_patch("add-first");
    CHECK_THROWS_AS(ctx.call<test::AddActivity>(test::Pair{1, 2}), Suspend);
    CHECK(replay.events.empty());
    CHECK_FALSE(replay.nondeterminism());
  }
  {
    JournalCache journal;  // a new run: no marker is written
    start_with_input(journal);
    Replay replay("wf", "w", journal, 1000, registry);
    WorkflowContext ctx = replay.context();
    ctx.deprecate_patch("add-first");
    CHECK_THROWS_AS(ctx.call<test::AddActivity>(test::Pair{1, 2}), Suspend);
    CHECK(kinds(replay) == std::vector{journal::EventKind::activity_scheduled});
    CHECK(replay.events[0].step == 0);
  }
  {
    // The call removed while a run still holds the marker: a non-determinism error that says so.
    JournalCache journal;
    start_with_input(journal);
    journal.apply(event(1, "patched", 0, "add-first"));
    Replay replay("wf", "w", journal, 1000, registry);
    WorkflowContext ctx = replay.context();
    expect_throw<NonDeterminismError>(
        [&] {
          ctx.call<test::AddActivity>(test::Pair{1, 2});
        },
        "journal holds patched('add-first')", "asked for activity 'add'");
  }
}

TEST_CASE("a bad patch id is a typed error and journals nothing", "[unit][versioning][bad_input]") {
  Registry registry = echo_registry();
  JournalCache journal;
  start_with_input(journal);
  Replay replay("wf", "w", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  expect_throw<InvalidPatchId>([&] { ctx.patched(""); }, "patch id is empty");
  expect_throw<InvalidPatchId>([&] { ctx.patched(std::string(256, 'p')); }, "256 bytes long: the limit is 255");
  expect_throw<InvalidPatchId>([&] { ctx.deprecate_patch(std::string("a\0b", 3)); }, "NUL");
  CHECK(ctx.patched(std::string(255, 'p')));  // at the limit
  CHECK(replay.events.size() == 1);
}

TEST_CASE("is_replaying is true while the code re-runs what the last replay ran, false from the news on",
          "[unit][versioning][logging]") {
  Registry registry = echo_registry();
  JournalCache journal;
  one_echo_done(journal, "a");
  journal.replayed_seq = 2;  // the last replay scheduled the echo and waited for it
  Replay replay("wf", "w", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  CHECK(ctx.is_replaying());
  ctx.call<test::EchoActivity>("x");
  CHECK_FALSE(ctx.is_replaying());
  JournalCache fresh;  // no replay committed yet: everything is news
  start_with_input(fresh);
  Replay first("wf", "w", fresh, 1000, registry);
  CHECK_FALSE(first.context().is_replaying());
}

TEST_CASE("an outcome journaled since the last committed replay read the journal ends the replaying part",
          "[unit][versioning][logging]") {
  Registry registry = echo_registry();
  JournalCache journal;
  start_with_input(journal);
  journal.apply(event(1, "activity_scheduled", 0, "echo"));
  journal.apply(event(2, "activity_scheduled", 1, "echo"));
  journal.apply(event(3, "activity_completed", 0, "echo", {{"result", "a"}}));
  journal.apply(event(4, "activity_completed", 1, "echo", {{"result", "b"}}));
  journal.replayed_seq = 4;  // the last replay got step 0's result, not step 1's
  Replay replay("wf", "w", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  auto first = ctx.start<test::EchoActivity>("x");
  auto second = ctx.start<test::EchoActivity>("y");
  first.get();
  CHECK(ctx.is_replaying());  // that replay got here, and logged what comes next
  second.get();
  CHECK_FALSE(ctx.is_replaying());
}

TEST_CASE("the workflow logger keeps what is logged on new ground and drops what replays log",
          "[unit][versioning][logging]") {
  Registry registry = echo_registry();
  JournalCache journal;
  one_echo_done(journal, "a");
  journal.replayed_seq = 2;
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  auto capture = std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  capture->set_pattern("%v");
  capture->set_level(spdlog::level::info);
  spdlog::set_default_logger(capture);
  {
    Replay replay("wf-log", "w", journal, 1000, registry);
    WorkflowContext ctx = replay.context();
    ctx.logger().info("before the first step");
    ctx.call<test::EchoActivity>("x");
    ctx.logger().info("after the first step");
    ctx.logger().debug("below the level");
    REQUIRE(replay.log_lines.size() == 1);
    CHECK(out.str().empty());  // nothing is written before the commit
    write_log_lines(replay.log_lines);
  }
  spdlog::set_default_logger(previous);
  CHECK(out.str() == "[wf-log] after the first step\n");
}

TEST_CASE("under the block policy a divergence decides nothing but the block", "[unit][versioning][decide]") {
  Registry registry = echo_registry();
  registry.workflows.emplace("w", make_workflow<std::string>("w", [] {
                               return [](WorkflowContext& ctx, const std::string& s) {
                                 ctx.sleep(std::chrono::seconds{1});  // settles now, then diverges
                                 return ctx.call<test::AddActivity>(test::Pair{1, static_cast<int>(s.size())});
                               };
                             }));
  JournalCache journal;
  start_with_input(journal);
  journal.name = "w";
  journal.apply(event(1, "timer_started", 0, "", {{"fire_at_us", 500}}));
  journal.apply(event(2, "activity_scheduled", 1, "echo"));
  const Decisions blocked =
      decide(registry, journal, "wf", 1000, Inbox::unread(), ChildIds::unread(), OnNondeterminism::block);
  REQUIRE(blocked.blocked);
  CHECK(blocked.blocked->step() == 1);
  CHECK(blocked.blocked->journaled() == "activity 'echo'");
  CHECK(blocked.blocked->asked() == "activity 'add'");
  CHECK(blocked.events.empty());  // not even the timer that fired
  CHECK(blocked.status == journal::RunStatus::running);
  const Decisions failed =
      decide(registry, journal, "wf", 1000, Inbox::unread(), ChildIds::unread(), OnNondeterminism::fail);
  CHECK_FALSE(failed.blocked);
  CHECK(failed.status == journal::RunStatus::failed);
  CHECK(failed.error_type == "durable::NonDeterminismError");
}

TEST_CASE("a wait_any that chooses now ends the replaying part, so what the code logs after it is written",
          "[unit][versioning][logging]") {
  Registry registry = echo_registry();
  JournalCache journal;
  start_with_input(journal);
  journal.apply(event(1, "timer_started", 0, "", {{"fire_at_us", 500}}));
  journal.apply(event(2, "receive_started", 1, "reply", {{"fire_at_us", -1}}));
  journal.replayed_seq = 3;  // the last replay started both and waited
  Inbox inbox;
  inbox.topics["reply"].complete = true;  // no reply came
  Replay replay("wf", "w", journal, 1000, registry, inbox);
  WorkflowContext ctx = replay.context();
  auto timer = ctx.start_timer(std::chrono::milliseconds{1});
  auto reply = ctx.start_receive<std::string>("reply");
  CHECK(ctx.is_replaying());
  CHECK(ctx.wait_any(timer, reply) == 0);
  CHECK_FALSE(ctx.is_replaying());
}

TEST_CASE("patched where a cancel was delivered keeps the old path, so the cancel is thrown where it was",
          "[unit][versioning]") {
  Registry registry = echo_registry();
  JournalCache journal;
  start_with_input(journal);
  journal.apply(event(1, "activity_scheduled", 0, "echo"));
  journal.apply(event(2, "cancel_requested", -1, "", {{"reason", "stop"}}));
  journal.apply(event(3, "cancel_delivered", -1, "", {{"at_step", 1}, {"awaited", 0}, {"dropped", {0}}}));
  Replay replay("wf", "w", journal, 1000, registry);
  WorkflowContext ctx = replay.context();
  auto echoed = ctx.start<test::EchoActivity>("x");
  CHECK_FALSE(ctx.patched("added-after-the-call"));
  CHECK_THROWS_AS(echoed.get(), WorkflowCancelled);
  CHECK(replay.events.empty());
}

TEST_CASE("code that ends the run before calls its journal holds diverges", "[unit][versioning][decide]") {
  Registry registry = echo_registry();
  registry.workflows.emplace("short", make_workflow<std::string>("short", [] {
                               return [](WorkflowContext& ctx, const std::string& s) {
                                 return ctx.call<test::EchoActivity>(s);  // it used to call echo twice
                               };
                             }));
  JournalCache journal;
  start_with_input(journal);
  journal.name = "short";
  journal.apply(event(1, "activity_scheduled", 0, "echo"));
  journal.apply(event(2, "activity_completed", 0, "echo", {{"result", "a"}}));
  journal.apply(event(3, "activity_scheduled", 1, "echo"));
  const Decisions d =
      decide(registry, journal, "wf", 1000, Inbox::unread(), ChildIds::unread(), OnNondeterminism::block);
  REQUIRE(d.blocked);
  CHECK(d.blocked->step() == 1);
  CHECK(d.blocked->journaled() == "activity 'echo'");
  CHECK(d.blocked->asked() == "the run's end");
}
