// The activity pool's slots as values.
//
// `size` body slots bound the activity bodies running at once: a task takes one just before its
// body runs and gives it back as soon as the body returns, while its outcome waits for and goes
// through the group commit. Launched tasks whose outcome is not committed yet are bounded by
// in-flight permits, twice the slots, so a slow commit cannot pile up work.
//
// A Reservation promises permits to tasks about to be leased to this engine (claimed, or leased
// at once by a replay commit), so two claimers never take the same one; whatever it did not
// launch is freed when it is dropped, on every path (and the claim loop is told, since it may
// want them). A fresh reservation takes only permits whose body slot is free now. A workflow
// that continues in place passes the finishing task's permit on to its next task, which then
// waits its turn for a body slot. A SlotHold is what a launched task holds on its pool thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "pg/store.hpp"
#include "pipeline/thread_pool.hpp"

namespace durable::detail {

// How many steps in a row of one workflow may lease the next one at once (continue in place)
// before the next goes through the queue like any task (see ClaimedTask::handovers).
constexpr int max_slot_handovers = 32;

class ActivitySlots;
class SlotHold;

class Reservation {
 public:
  Reservation() = default;
  Reservation(Reservation&& other) noexcept;
  Reservation& operator=(Reservation&& other) noexcept;
  ~Reservation();  // frees the permits it holds
  int count() const { return fresh_ + passed_on_; }

 private:
  friend class ActivitySlots;
  Reservation(ActivitySlots* slots, int fresh, int passed_on) : slots_(slots), fresh_(fresh), passed_on_(passed_on) {}
  void release(bool tell_claimer = true);
  ActivitySlots* slots_ = nullptr;
  int fresh_ = 0;      // permits taken from the free ones
  int passed_on_ = 0;  // 1: the finishing task's own permit, never counted as free
};

// Held by a launched task on its pool thread: its in-flight permit until the job ends (its
// outcome committed or given up), and a body slot from start_body() to body_returned().
class SlotHold {
 public:
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;
  ~SlotHold();
  // Waits for a body slot; false when the pool is closing (the body must not run).
  [[nodiscard]] bool start_body();
  void body_returned();  // the body slot goes back at once
  // Whether the workflow may lease its next task at once (continue in place): not after
  // max_slot_handovers steps in a row did, so that a long chain cannot starve the queue.
  bool may_continue_in_place() const { return continues_; }

 private:
  friend class ActivitySlots;
  SlotHold(ActivitySlots& slots, const pg::ClaimedTask& task);
  ActivitySlots& slots_;
  bool asked_for_body_ = false;  // until then it counts as one of the slots' starting_ tasks
  bool body_ = false;
  bool continues_;
  bool permit_passed_on_ = false;
};

class ActivitySlots {
 public:
  using Run = std::function<void(const pg::ClaimedTask&, SlotHold&)>;
  // `run` settles one task on a pool thread; `on_slot_freed` runs when a slot may have become
  // free for a claim (a body returned, an outcome committed, a reservation went unused).
  ActivitySlots(int size, Run run, std::function<void()> on_slot_freed);

  // Up to `wanted` permits. `hold`: the task settled on this thread, whose workflow continues in
  // place: its own permit goes first, and nothing when it may not continue.
  Reservation reserve(int wanted, SlotHold* hold = nullptr);
  // Runs each task (leased to this engine) on a permit of `slots`, one each; frees the rest, and
  // tells the claim loop of them unless it is the one launching (its own are no news to it).
  enum class Unused { tell_claimer, keep_quiet };
  void launch(std::vector<pg::ClaimedTask> tasks, Reservation slots, Unused unused = Unused::tell_claimer);
  bool has_free() const;
  int size() const { return size_; }
  int running_bodies() const;
  int in_flight() const;  // launched, outcome not yet committed
  bool wait_idle(std::chrono::milliseconds timeout) { return pool_.wait_idle(timeout); }
  void close();  // tasks waiting for a body slot give up (start_body() returns false)
  void shutdown();

 private:
  friend class Reservation;
  friend class SlotHold;
  int free_locked() const;
  void release(int fresh, bool tell_claimer);
  bool take_body(bool first_ask);
  void give_body_back();
  void job_ended(bool never_asked_for_body);
  const int size_;
  Run run_;
  std::function<void()> on_slot_freed_;
  mutable std::mutex mutex_;
  std::condition_variable body_free_;
  int reserved_ = 0;   // fresh permits promised to reservations, not yet launched
  int starting_ = 0;   // launched tasks that have not asked for a body slot yet (nor ended)
  int bodies_ = 0;     // bodies running
  int waiting_ = 0;    // launched tasks waiting for a body slot
  int in_flight_ = 0;  // launched tasks whose job has not ended
  bool closing_ = false;
  ThreadPool pool_;  // last: its threads (one per permit) may run jobs as soon as it exists
};

}  // namespace durable::detail
