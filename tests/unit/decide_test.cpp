// The pure replay: journal + workflow code -> what to commit, with no database and no engine.
#include <catch2/catch.hpp>

#include "base/registry.hpp"
#include "replay/decide.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::detail;

namespace {

// Schedules an echo it never awaits and returns: the unawaited call must never run.
struct ForgetfulWorkflow {
  static constexpr auto name = "forgetful";
  std::string operator()(WorkflowContext& ctx, const std::string& who) {
    (void)ctx.start<test::EchoActivity>(who);
    return "done";
  }
};

// Swallows the non-determinism error its changed code causes: the decision must still fail the run.
struct SwallowingWorkflow {
  static constexpr auto name = "swallowing";
  std::string operator()(WorkflowContext& ctx, const std::string& who) {
    try {
      return ctx.call<test::AddActivity>(test::Pair{1, 2}) == 3 ? who : "";
    } catch (const NonDeterminismError&) {
      return "hidden";
    }
  }
};

// Starts an echo it never awaits, then continues as new with n + 1; with n < 0 it swallows the
// unwinding (as `catch (...)` would) and returns: the run must continue as new all the same.
struct RestartingWorkflow {
  static constexpr auto name = "restarting";
  std::string operator()(WorkflowContext& ctx, const int& n) {
    (void)ctx.start<test::EchoActivity>("x");
    try {
      ctx.continue_as_new(n + 1);
    } catch (...) {
      if (n >= 0) throw;
    }
    return "swallowed";
  }
};

template <typename W>
void add_workflow(Registry& r) {
  r.workflows.emplace(W::name, make_workflow<detail::input_of<W>>(W::name, [] { return W{}; }));
}

Registry registry() {
  Registry r;
  r.activities.emplace("echo", make_activity<std::string>("echo", {}, test::EchoActivity{}));
  r.activities.emplace("add", make_activity<test::Pair>("add", {}, test::AddActivity{}));
  add_workflow<test::HelloWorkflow>(r);
  add_workflow<test::FailingWorkflow>(r);
  add_workflow<test::SleepWorkflow>(r);
  add_workflow<ForgetfulWorkflow>(r);
  add_workflow<SwallowingWorkflow>(r);
  add_workflow<RestartingWorkflow>(r);
  return r;
}

// A journal holds a mutex (a replay holds it busy): filled in place.
void start(JournalCache& journal, const std::string& workflow, Json input) {
  journal.name = workflow;
  journal.apply({0, journal::EventKind::workflow_started, -1, "", {{"input", std::move(input)}}});
}

void add(JournalCache& journal, journal::EventKind kind, int step, const std::string& name,
         Json data = Json::object()) {
  journal.apply({journal.next_seq, kind, step, name, std::move(data)});
}

std::vector<journal::EventKind> kinds(const Decisions& d) {
  std::vector<journal::EventKind> out;
  for (const auto& e : d.events) out.push_back(e.kind);
  return out;
}

}  // namespace

TEST_CASE("a fresh run decides to schedule its first activity and waits", "[unit][decide]") {
  const Registry r = registry();
  JournalCache journal;
  start(journal, "hello", "world");
  const Decisions d = decide(r, journal, "wf-1", 1000);
  CHECK(d.status == journal::RunStatus::running);
  CHECK_FALSE(d.ended());
  REQUIRE(d.tasks.size() == 1);
  CHECK(d.tasks[0].name == "echo");
  CHECK(d.tasks[0].input == "world");
  CHECK_FALSE(d.tasks[0].claim);  // leasing at once is the pipeline's choice, not the replay's
  CHECK(kinds(d) == std::vector{journal::EventKind::activity_scheduled});
  CHECK(d.wake_at_us == -1);
}

TEST_CASE("a run whose last result is journaled completes with the workflow's result", "[unit][decide]") {
  const Registry r = registry();
  JournalCache journal;
  start(journal, "hello", "world");
  add(journal, journal::EventKind::activity_scheduled, 0, "echo");
  add(journal, journal::EventKind::activity_completed, 0, "echo", {{"result", "there"}});
  const Decisions d = decide(r, journal, "wf-2", 1000);
  CHECK(d.status == journal::RunStatus::completed);
  CHECK(d.result == "hello, there");
  CHECK(d.tasks.empty());
  CHECK(kinds(d) == std::vector{journal::EventKind::workflow_completed});
  CHECK(d.events.back().data["result"] == "hello, there");
}

TEST_CASE("workflow code that throws fails the run with the exception's type and message", "[unit][decide]") {
  const Registry r = registry();
  JournalCache journal;
  start(journal, "failing", "why");
  add(journal, journal::EventKind::activity_scheduled, 0, "echo");
  add(journal, journal::EventKind::activity_completed, 0, "echo", {{"result", "why"}});
  const Decisions d = decide(r, journal, "wf-3", 1000);
  CHECK(d.status == journal::RunStatus::failed);
  CHECK(d.error_type == "std::logic_error");
  CHECK(d.error_message == "workflow gave up: why");
  CHECK(kinds(d) == std::vector{journal::EventKind::workflow_failed});
}

// Journals what a commit of `d` would: its events after the journal's current end.
void commit(JournalCache& journal, const Decisions& d) {
  for (const auto& e : d.events) add(journal, e.kind, e.step, e.name, e.data);
}

TEST_CASE("a run that ends runs no activity it never awaited, and keeps its step", "[unit][decide]") {
  const Registry r = registry();
  JournalCache journal;
  start(journal, "forgetful", "x");
  const Decisions d = decide(r, journal, "wf-4", 1000);
  CHECK(d.status == journal::RunStatus::completed);
  REQUIRE(d.tasks.size() == 1);  // written dropped: never run, there for a resume
  CHECK(d.tasks[0].dropped);
  CHECK_FALSE(d.tasks[0].claim);
  CHECK(kinds(d) == std::vector{journal::EventKind::activity_scheduled, journal::EventKind::workflow_completed});
  commit(journal, d);  // the steps stay consecutive: the reader takes the ended journal
  CHECK(journal.steps.size() == 1);
}

TEST_CASE("a non-determinism error the code swallows still fails the run", "[unit][decide]") {
  const Registry r = registry();
  JournalCache journal;
  start(journal, "swallowing", "x");
  add(journal, journal::EventKind::activity_scheduled, 0, "echo");  // the old code called echo here
  const Decisions d = decide(r, journal, "wf-5", 1000);
  CHECK(d.status == journal::RunStatus::failed);
  CHECK(d.error_type == "durable::NonDeterminismError");
  CHECK_THAT(d.error_message,
             Catch::Contains("the journal holds activity 'echo' but the code asked for activity 'add'"));
  CHECK(d.tasks.empty());
}

TEST_CASE("a timer decides a wake-up time and fires only once the given clock passes it", "[unit][decide]") {
  const Registry r = registry();
  JournalCache journal;
  start(journal, "sleeper", 50);
  add(journal, journal::EventKind::side_effect, 0, "now", {{"value", 1'000'000}});  // ctx.now() before the sleep
  const Decisions first = decide(r, journal, "wf-6", 1'000'000);
  REQUIRE(kinds(first) == std::vector{journal::EventKind::timer_started});
  CHECK(first.wake_at_us == 1'050'000);
  add(journal, journal::EventKind::timer_started, 1, "", first.events[0].data);
  CHECK(decide(r, journal, "wf-6", 1'049'999).events.empty());  // not due: nothing new
  const Decisions due = decide(r, journal, "wf-6", 1'050'000);
  CHECK(due.events.front().kind == journal::EventKind::timer_fired);
}

TEST_CASE("the same journal and code decide the same, however often they are replayed", "[unit][decide]") {
  const Registry r = registry();
  JournalCache journal;
  start(journal, "hello", "again");
  const Decisions a = decide(r, journal, "wf-7", 1000);
  const Decisions b = decide(r, journal, "wf-7", 5000);
  REQUIRE(a.events.size() == b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    CHECK(a.events[i].kind == b.events[i].kind);
    CHECK(a.events[i].step == b.events[i].step);
    CHECK(a.events[i].data == b.events[i].data);
  }
  REQUIRE(a.tasks.size() == b.tasks.size());
  CHECK(a.tasks[0].input == b.tasks[0].input);
}

TEST_CASE("deciding for a workflow the registry does not know throws UnknownWorkflow", "[unit][decide]") {
  const Registry r = registry();
  JournalCache journal;
  start(journal, "retired", "x");
  CHECK_THROWS_AS(decide(r, journal, "wf-8", 1000), UnknownWorkflow);
}

TEST_CASE("continue_as_new ends the run continued, naming the next run, its unawaited activities dropped",
          "[unit][decide][continue]") {
  const Registry r = registry();
  for (int n : {4, -1}) {
    JournalCache journal;
    start(journal, "restarting", n);
    const Decisions d = decide(r, journal, "wf-c", 1000);
    CHECK(d.status == journal::RunStatus::continued);
    CHECK(d.ended());
    REQUIRE(d.tasks.size() == 1);
    CHECK(d.tasks[0].dropped);
    CHECK(d.next_input == n + 1);
    REQUIRE_FALSE(d.next_run_id.empty());
    CHECK(d.result == Json{{"continued_as", d.next_run_id}});
    CHECK(kinds(d) == std::vector{journal::EventKind::activity_scheduled, journal::EventKind::workflow_continued});
    CHECK(d.events.back().data == Json{{"input", n + 1}, {"run_id", d.next_run_id}});
  }
}
