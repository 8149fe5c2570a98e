// Slot accounting of the activity pool, without a database: reservations are values that free
// themselves, a returned body gives its slot back while its outcome commits, launched tasks
// not yet committed stay within twice the slots, and a long chain leaves the queue its turn.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "pipeline/activity_slots.hpp"

using namespace durable::detail;
using durable::pg::ClaimedTask;

namespace {

// Catch2's assertions are not thread-safe: pool threads count what went wrong, the test checks it.
std::atomic<int> refused{0};

// A gate tasks wait at, counting how many wait at once.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int waiting = 0, most = 0;

  void pass() {
    std::unique_lock lock(mutex);
    most = std::max(most, ++waiting);
    changed.notify_all();
    changed.wait(lock, [&] { return open; });
    --waiting;
  }
  void wait_for(int n) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return waiting == n; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

ClaimedTask task_after(int handovers) {
  ClaimedTask t;
  t.handovers = handovers;
  return t;
}

}  // namespace

TEST_CASE("a reservation takes only free slots, and frees what it did not use when dropped", "[unit][slots]") {
  std::atomic<int> told{0};
  ActivitySlots slots(
      2, [](const ClaimedTask&, SlotHold&) {}, [&] { ++told; });
  {
    Reservation a = slots.reserve(3);
    CHECK(a.count() == 2);
    CHECK(slots.reserve(1).count() == 0);  // both promised to `a`
    CHECK_FALSE(slots.has_free());
    CHECK(told == 0);
  }
  CHECK(told == 1);  // `a` went unused: the claimer hears of it
  CHECK(slots.has_free());
  Reservation moved = slots.reserve(2);
  Reservation into = std::move(moved);
  CHECK(moved.count() == 0);
  CHECK(into.count() == 2);
  CHECK(slots.reserve(1).count() == 0);  // moving does not free
}

TEST_CASE("no more bodies run at once than there are slots", "[unit][slots]") {
  refused = 0;
  Gate bodies;
  ActivitySlots slots(
      3,
      [&](const ClaimedTask&, SlotHold& hold) {
        if (!hold.start_body()) ++refused;
        bodies.pass();
      },
      [] {});
  slots.launch(std::vector<ClaimedTask>(3), slots.reserve(5), ActivitySlots::Unused::keep_quiet);
  bodies.wait_for(3);
  CHECK(slots.running_bodies() == 3);
  CHECK(slots.reserve(1).count() == 0);  // every body slot is taken
  bodies.release();
  REQUIRE(slots.wait_idle(std::chrono::seconds{10}));
  CHECK(bodies.most == 3);
  CHECK(slots.running_bodies() == 0);
  CHECK(slots.reserve(3).count() == 3);
  CHECK(refused == 0);  // every task got its body slot
}

TEST_CASE("a returned body frees its slot while its outcome commits, and uncommitted tasks stay within twice the slots",
          "[unit][slots]") {
  refused = 0;
  Gate commits;
  std::atomic<int> told{0};
  // The body returns at once; the outcome's commit waits at the gate.
  ActivitySlots slots(
      2,
      [&](const ClaimedTask&, SlotHold& hold) {
        if (!hold.start_body()) ++refused;
        hold.body_returned();
        commits.pass();
      },
      [&] { ++told; });
  slots.launch(std::vector<ClaimedTask>(2), slots.reserve(2), ActivitySlots::Unused::keep_quiet);
  commits.wait_for(2);
  CHECK(slots.running_bodies() == 0);
  CHECK(told >= 1);  // the claimer heard that the body slots came back
  Reservation more = slots.reserve(5);
  CHECK(more.count() == 2);  // two more bodies while two outcomes commit ...
  slots.launch(std::vector<ClaimedTask>(2), std::move(more), ActivitySlots::Unused::keep_quiet);
  commits.wait_for(4);
  CHECK(slots.in_flight() == 4);
  CHECK(slots.reserve(1).count() == 0);  // ... and no more: 4 launched, none committed
  commits.release();
  REQUIRE(slots.wait_idle(std::chrono::seconds{10}));
  CHECK(slots.in_flight() == 0);
  CHECK(slots.reserve(2).count() == 2);
  CHECK(refused == 0);  // every task got its body slot
}

TEST_CASE("unused slots of a launch are told to the claimer, unless the claimer launched them", "[unit][slots]") {
  std::atomic<int> told{0};
  ActivitySlots slots(
      2, [](const ClaimedTask&, SlotHold&) {}, [&] { ++told; });
  slots.launch({}, slots.reserve(2), ActivitySlots::Unused::keep_quiet);
  CHECK(told == 0);
  slots.launch({}, slots.reserve(2));
  CHECK(told == 1);
  CHECK(slots.reserve(2).count() == 2);
}

TEST_CASE("a workflow leases its next task at once only 32 steps in a row, then queues it", "[unit][slots]") {
  refused = 0;
  std::atomic<int> granted_fresh{-1}, granted_worn{-1};
  ActivitySlots slots(
      2,
      [&](const ClaimedTask& task, SlotHold& hold) {
        if (!hold.start_body()) ++refused;
        hold.body_returned();
        (task.handovers == 0 ? granted_fresh : granted_worn) = slots.reserve(1, &hold).count();
      },
      [] {});
  std::vector<ClaimedTask> tasks{task_after(0), task_after(max_slot_handovers)};
  slots.launch(std::move(tasks), slots.reserve(2));
  REQUIRE(slots.wait_idle(std::chrono::seconds{10}));
  CHECK(granted_fresh == 1);
  CHECK(granted_worn == 0);  // the chain gives the queue its turn
  CHECK(refused == 0);       // every task got its body slot
}

TEST_CASE("a workflow continuing in place passes its permit on, and its next task waits for a body slot",
          "[unit][slots]") {
  refused = 0;
  Gate bodies;
  std::atomic<int> passed{-1};
  ActivitySlots* self = nullptr;
  ActivitySlots slots(
      1,
      [&](const ClaimedTask& task, SlotHold& hold) {
        if (!hold.start_body()) ++refused;
        if (task.step == 0) {  // the finishing step: its body returned, it continues in place
          hold.body_returned();
          Reservation next = self->reserve(1, &hold);
          passed = next.count();
          ClaimedTask second;
          second.step = 1;
          self->launch({second}, std::move(next));
          return;
        }
        bodies.pass();
      },
      [] {});
  self = &slots;
  slots.launch({ClaimedTask{}}, slots.reserve(1));
  bodies.wait_for(1);
  CHECK(passed == 1);
  CHECK(slots.running_bodies() == 1);
  CHECK(slots.reserve(1).count() == 0);  // the one body slot is busy
  bodies.release();
  REQUIRE(slots.wait_idle(std::chrono::seconds{10}));
  CHECK(slots.in_flight() == 0);
  CHECK(refused == 0);  // every task got its body slot
}

TEST_CASE("a task waiting for a body slot gives up when the pool closes", "[unit][slots]") {
  refused = 0;
  Gate bodies;
  std::atomic<int> gave_up{0};
  ActivitySlots* self = nullptr;
  ActivitySlots slots(
      1,
      [&](const ClaimedTask& task, SlotHold& hold) {
        if (task.step == 0) {
          if (!hold.start_body()) ++refused;
          Reservation next = self->reserve(1, &hold);  // passed on while the body still runs
          ClaimedTask waiting;
          waiting.step = 1;
          self->launch({waiting}, std::move(next));
          bodies.pass();
          return;
        }
        if (!hold.start_body()) ++gave_up;
      },
      [] {});
  self = &slots;
  slots.launch({ClaimedTask{}}, slots.reserve(1));
  bodies.wait_for(1);
  slots.close();
  bodies.release();
  REQUIRE(slots.wait_idle(std::chrono::seconds{10}));
  CHECK(gave_up == 1);
  CHECK(refused == 0);  // every task got its body slot
}

TEST_CASE("a launched task that has not asked for its body slot yet keeps it from new reservations", "[unit][slots]") {
  // The job waits at `before_body` before it asks for a body slot: the moment between a task's
  // launch and its body's start, held open.
  Gate before_body;
  ActivitySlots slots(
      1,
      [&](const ClaimedTask&, SlotHold& hold) {
        before_body.pass();
        if (hold.start_body()) hold.body_returned();
      },
      [] {});
  slots.launch({task_after(0)}, slots.reserve(1));
  before_body.wait_for(1);
  // Were the slot counted free now, a task leased on it would wait for this one's whole body.
  CHECK(slots.reserve(1).count() == 0);
  CHECK_FALSE(slots.has_free());
  before_body.release();
  REQUIRE(slots.wait_idle(std::chrono::seconds{10}));
  CHECK(slots.reserve(1).count() == 1);

  // A job that ends without asking for a body (a reused result, say) gives the slot back too.
  ActivitySlots bodiless(
      1, [](const ClaimedTask&, SlotHold&) {}, [] {});
  bodiless.launch({task_after(0)}, bodiless.reserve(1));
  REQUIRE(bodiless.wait_idle(std::chrono::seconds{10}));
  CHECK(bodiless.reserve(1).count() == 1);
}
