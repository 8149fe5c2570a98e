// The activity pool's slots as values. A Reservation promises free slots to tasks about to be
// leased to this engine (claimed, or leased at once by a replay commit), so two claimers never
// take the same slot; whatever it did not launch is freed when it is dropped, on every path (and
// the claim loop is told, since it may want them).
// A Handover is the busy slot of the task a pool thread settles: the next step of the same
// workflow may take it over (continue in place) instead of reserving another one.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

#include "dispatch/thread_pool.hpp"
#include "pg/store.hpp"

namespace durable::detail {

// How many steps in a row of one workflow may pass a slot on to the next (see ClaimedTask::handovers).
constexpr int max_slot_handovers = 32;

class ActivitySlots;

// The slot of the task being settled on this pool thread, passed on at most once.
class Handover {
 public:
  explicit Handover(const pg::ClaimedTask& task) : available_(task.handovers < max_slot_handovers) {}
  Handover(const Handover&) = delete;
  Handover& operator=(const Handover&) = delete;

 private:
  friend class ActivitySlots;
  bool available_;
};

class Reservation {
 public:
  Reservation() = default;
  Reservation(Reservation&& other) noexcept;
  Reservation& operator=(Reservation&& other) noexcept;
  ~Reservation();  // frees the slots it holds
  int count() const { return reserved_ + own_; }

 private:
  friend class ActivitySlots;
  Reservation(ActivitySlots* slots, int reserved, int own) : slots_(slots), reserved_(reserved), own_(own) {}
  void release(bool tell_claimer = true);
  ActivitySlots* slots_ = nullptr;
  int reserved_ = 0;  // free slots promised to this reservation
  int own_ = 0;       // 1: a handed-over busy slot, never counted as free
};

class ActivitySlots {
 public:
  using Run = std::function<void(const pg::ClaimedTask&, Handover&)>;
  // `run` settles one task on a pool thread; `on_slot_freed` runs when a slot may have become
  // free for a claim (a job ended, or a reservation went unused).
  ActivitySlots(int size, Run run, std::function<void()> on_slot_freed);

  // Up to `wanted` slots: the handed-over one first (if given and still available), then free ones.
  Reservation reserve(int wanted, Handover* handover = nullptr);
  // Runs each task (leased to this engine) on a slot of `slots`, one each; frees the rest, and
  // tells the claim loop of them unless it is the one launching (its own are no news to it).
  enum class Unused { tell_claimer, keep_quiet };
  void launch(std::vector<pg::ClaimedTask> tasks, Reservation slots, Unused unused = Unused::tell_claimer);
  bool has_free() const;
  int size() const { return pool_.size(); }
  int busy() const { return pool_.busy(); }
  bool wait_idle(std::chrono::milliseconds timeout) { return pool_.wait_idle(timeout); }
  void shutdown() { pool_.shutdown(); }

 private:
  friend class Reservation;
  void release(int reserved, bool tell_claimer);
  Run run_;
  std::function<void()> on_slot_freed_;
  mutable std::mutex mutex_;
  int reserved_ = 0;  // slots promised to reservations, not yet submitted
  ThreadPool pool_;   // last: its threads may run jobs as soon as it exists
};

}  // namespace durable::detail
