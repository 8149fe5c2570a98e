// Slot accounting of the activity pool, without a database: reservations are values that free
// themselves, a handed-over slot is passed on once, and no more tasks run than there are slots.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "dispatch/activity_slots.hpp"

using namespace durable::detail;
using durable::pg::ClaimedTask;

namespace {

// Tasks that wait at a gate, counting how many run at once.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int running = 0, most = 0, ran = 0;

  void pass() {
    std::unique_lock lock(mutex);
    most = std::max(most, ++running);
    changed.notify_all();
    changed.wait(lock, [&] { return open; });
    --running;
    ++ran;
  }
  void wait_running(int n) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return running == n; });
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
      2, [](const ClaimedTask&, Handover&) {}, [&] { ++told; });
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

TEST_CASE("launched tasks keep their slots until they return, and never more run than there are slots",
          "[unit][slots]") {
  Gate gate;
  std::atomic<int> told{0};
  ActivitySlots slots(
      3, [&](const ClaimedTask&, Handover&) { gate.pass(); }, [&] { ++told; });
  slots.launch(std::vector<ClaimedTask>(3), slots.reserve(3), ActivitySlots::Unused::keep_quiet);
  gate.wait_running(3);
  CHECK(slots.reserve(1).count() == 0);  // all busy
  CHECK(slots.busy() == 3);
  CHECK(told == 0);
  gate.release();
  REQUIRE(slots.wait_idle(std::chrono::seconds{10}));
  CHECK(gate.ran == 3);
  CHECK(gate.most == 3);
  CHECK(slots.reserve(3).count() == 3);
  CHECK(told >= 1);  // a returning task frees a slot: the claimer hears of it
}

TEST_CASE("unused slots of a launch are told to the claimer, unless the claimer launched them", "[unit][slots]") {
  std::atomic<int> told{0};
  ActivitySlots slots(
      2, [](const ClaimedTask&, Handover&) {}, [&] { ++told; });
  slots.launch({}, slots.reserve(2), ActivitySlots::Unused::keep_quiet);
  CHECK(told == 0);
  slots.launch({}, slots.reserve(2));
  CHECK(told == 1);
  CHECK(slots.reserve(2).count() == 2);
}

TEST_CASE("a handed-over slot is passed on once, reserves no free slot, and only 32 times in a row", "[unit][slots]") {
  ActivitySlots slots(
      1, [](const ClaimedTask&, Handover&) {}, [] {});
  Reservation only_free = slots.reserve(1);
  REQUIRE(only_free.count() == 1);
  Handover handover(task_after(0));
  Reservation first = slots.reserve(2, &handover);
  CHECK(first.count() == 1);                        // the handed-over slot, and no free one left
  CHECK(slots.reserve(1, &handover).count() == 0);  // passed on already
  Handover worn(task_after(max_slot_handovers));
  CHECK(slots.reserve(1, &worn).count() == 0);  // the chain gives its slot back to the queue
  first = Reservation();
  CHECK(slots.reserve(1).count() == 0);  // dropping a handed-over slot frees no free slot
}
