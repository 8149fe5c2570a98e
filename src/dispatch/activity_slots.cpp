#include "dispatch/activity_slots.hpp"

#include <algorithm>
#include <utility>

namespace durable::detail {

Reservation::Reservation(Reservation&& other) noexcept
    : slots_(std::exchange(other.slots_, nullptr)),
      reserved_(std::exchange(other.reserved_, 0)),
      own_(std::exchange(other.own_, 0)) {}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    release();
    slots_ = std::exchange(other.slots_, nullptr);
    reserved_ = std::exchange(other.reserved_, 0);
    own_ = std::exchange(other.own_, 0);
  }
  return *this;
}

Reservation::~Reservation() { release(); }

void Reservation::release(bool tell_claimer) {
  // A handed-over slot is the settling job's own: it frees itself when that job ends.
  if (slots_ && reserved_ > 0) slots_->release(reserved_, tell_claimer);
  slots_ = nullptr;
  reserved_ = own_ = 0;
}

ActivitySlots::ActivitySlots(int size, Run run, std::function<void()> on_slot_freed)
    : run_(std::move(run)), on_slot_freed_(std::move(on_slot_freed)), pool_(size, [this] {
        // A slot handed over to the next step is not free: no need to wake the claim loop for it.
        if (has_free()) on_slot_freed_();
      }) {}

Reservation ActivitySlots::reserve(int wanted, Handover* handover) {
  int own = 0;
  if (wanted > 0 && handover && handover->available_) {
    handover->available_ = false;  // taken over once the job that holds it returns
    own = 1;
  }
  std::lock_guard lock(mutex_);
  const int free = std::max(pool_.free_slots() - reserved_, 0);
  const int granted = std::min(free, wanted - own);
  reserved_ += granted;
  return Reservation(this, granted, own);
}

void ActivitySlots::launch(std::vector<pg::ClaimedTask> tasks, Reservation slots, Unused unused) {
  const bool some_unused = static_cast<int>(tasks.size()) < slots.count();
  for (auto& task : tasks) {
    pool_.submit([this, task = std::move(task)] {
      Handover handover(task);
      run_(task, handover);
    });
  }
  // Released after submitting, so the slots are never counted free twice.
  slots.release(false);
  if (some_unused && unused == Unused::tell_claimer) on_slot_freed_();
}

bool ActivitySlots::has_free() const {
  std::lock_guard lock(mutex_);
  return pool_.free_slots() > reserved_;
}

void ActivitySlots::release(int reserved, bool tell_claimer) {
  {
    std::lock_guard lock(mutex_);
    reserved_ -= reserved;
  }
  if (tell_claimer) on_slot_freed_();
}

}  // namespace durable::detail
