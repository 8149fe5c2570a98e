#include "pipeline/activity_slots.hpp"

#include <algorithm>
#include <utility>

namespace durable::detail {

Reservation::Reservation(Reservation&& other) noexcept
    : slots_(std::exchange(other.slots_, nullptr)),
      fresh_(std::exchange(other.fresh_, 0)),
      passed_on_(std::exchange(other.passed_on_, 0)) {}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    release();
    slots_ = std::exchange(other.slots_, nullptr);
    fresh_ = std::exchange(other.fresh_, 0);
    passed_on_ = std::exchange(other.passed_on_, 0);
  }
  return *this;
}

Reservation::~Reservation() { release(); }

void Reservation::release(bool tell_claimer) {
  // A permit passed on is the finishing job's own: it goes back when that job ends.
  if (slots_ && fresh_ > 0) slots_->release(fresh_, tell_claimer);
  slots_ = nullptr;
  fresh_ = passed_on_ = 0;
}

SlotHold::SlotHold(ActivitySlots& slots, const pg::ClaimedTask& task)
    : slots_(slots), continues_(task.handovers < max_slot_handovers) {}

SlotHold::~SlotHold() {
  body_returned();
  slots_.job_ended(!asked_for_body_);
}

bool SlotHold::start_body() {
  if (!body_) {
    body_ = slots_.take_body(!asked_for_body_);
    asked_for_body_ = true;
  }
  return body_;
}

void SlotHold::body_returned() {
  if (!body_) return;
  body_ = false;
  slots_.give_body_back();
}

// One thread per permit: while outcomes commit, the freed body slots run other bodies.
ActivitySlots::ActivitySlots(int size, Run run, std::function<void()> on_slot_freed)
    : size_(size), run_(std::move(run)), on_slot_freed_(std::move(on_slot_freed)), pool_(2 * size, [] {}) {}

// Fresh permits: within both bounds, and each with a body slot nobody waits for or is about to
// ask for (a task launched a moment ago takes its body slot soon: leasing another task on that
// slot would leave one of them waiting for the other's whole body).
int ActivitySlots::free_locked() const {
  return std::max(std::min(size_ - bodies_ - waiting_ - starting_, 2 * size_ - in_flight_) - reserved_, 0);
}

Reservation ActivitySlots::reserve(int wanted, SlotHold* hold) {
  if (wanted <= 0 || (hold && !hold->continues_)) return {};
  int passed_on = 0;
  if (hold && !hold->permit_passed_on_) {
    hold->permit_passed_on_ = true;
    passed_on = 1;
  }
  std::lock_guard lock(mutex_);
  const int fresh = std::min(free_locked(), wanted - passed_on);
  reserved_ += fresh;
  return Reservation(this, fresh, passed_on);
}

void ActivitySlots::launch(std::vector<pg::ClaimedTask> tasks, Reservation slots, Unused unused) {
  const int launched = static_cast<int>(tasks.size());  // never more than reserved: leased for these permits
  const int fresh = std::min(std::max(launched - slots.passed_on_, 0), slots.fresh_);
  const bool some_unused = launched < slots.count();
  {
    std::lock_guard lock(mutex_);
    in_flight_ += launched;  // a permit passed on is counted twice until the finishing job ends
    starting_ += launched;
    reserved_ -= fresh;
    slots.fresh_ -= fresh;
  }
  for (auto& task : tasks) {
    pool_.submit([this, task = std::move(task)] {
      SlotHold hold(*this, task);
      run_(task, hold);
    });
  }
  slots.release(false);
  if (some_unused && unused == Unused::tell_claimer) on_slot_freed_();
}

bool ActivitySlots::has_free() const {
  std::lock_guard lock(mutex_);
  return free_locked() > 0;
}

int ActivitySlots::running_bodies() const {
  std::lock_guard lock(mutex_);
  return bodies_;
}

int ActivitySlots::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

void ActivitySlots::close() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  body_free_.notify_all();
}

void ActivitySlots::shutdown() {
  close();
  pool_.shutdown();
}

void ActivitySlots::release(int fresh, bool tell_claimer) {
  {
    std::lock_guard lock(mutex_);
    reserved_ -= fresh;
  }
  if (tell_claimer) on_slot_freed_();
}

bool ActivitySlots::take_body(bool first_ask) {
  std::unique_lock lock(mutex_);
  if (first_ask) --starting_;
  ++waiting_;
  body_free_.wait(lock, [&] { return closing_ || bodies_ < size_; });
  --waiting_;
  if (closing_) return false;
  ++bodies_;
  return true;
}

void ActivitySlots::give_body_back() {
  bool free = false;
  {
    std::lock_guard lock(mutex_);
    --bodies_;
    free = free_locked() > 0;
  }
  body_free_.notify_one();
  if (free) on_slot_freed_();
}

void ActivitySlots::job_ended(bool never_asked_for_body) {
  bool free = false;
  {
    std::lock_guard lock(mutex_);
    --in_flight_;
    if (never_asked_for_body) --starting_;
    free = free_locked() > 0;
  }
  if (free) on_slot_freed_();
}

}  // namespace durable::detail
