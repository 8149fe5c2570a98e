#include "soak/load.hpp"

#include <fmt/format.h>

#include "support/test_workflows.hpp"

namespace durable::soak {

namespace {

using namespace std::chrono_literals;

constexpr int kinds = 4;
constexpr auto message_after = 2s;  // the inbox run waits this long for its message
constexpr int timer_ms = 1000;
constexpr int children = 2;
constexpr std::size_t failures_kept = 10;

const char* name_of(int kind) {
  switch (kind) {
    case 0: return test::ChainWorkflow::name;
    case 1: return test::SleepWorkflow::name;
    case 2: return test::InboxWorkflow::name;
    default: return test::FanOutWorkflow::name;
  }
}

Json input_of(int kind, std::int64_t n) {
  switch (kind) {
    case 0: return n;
    case 1: return timer_ms;
    case 2: return Json(test::InboxInput{.count = 1});
    default: return children;
  }
}

std::string message_of(std::int64_t n) { return "m" + std::to_string(n); }

// Whether `result` is what run `n` of `kind` must return.
bool right_result(int kind, std::int64_t n, const Json& result) {
  switch (kind) {
    case 0: return result == Json(n + 5);  // five increments
    case 1: return result.is_object() && result.value("slept_ms", -1) >= timer_ms;
    case 2: return result == Json::array({message_of(n)});
    default: return result == Json(children * (children + 1));  // the doubles of 1..children
  }
}

}  // namespace

Load::Load(Engine& client, double rate, std::string prefix)
    : client_(client),
      period_(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(1.0 / rate))),
      prefix_(std::move(prefix)),
      burst_(static_cast<std::int64_t>(10 * rate)),
      pending_(kinds) {
  threads_.emplace_back([this] { start_loop(); });
  for (int kind = 0; kind < kinds; ++kind) threads_.emplace_back([this, kind] { read_loop(kind); });
}

Load::~Load() {
  starting_ = false;
  {
    std::lock_guard lock(mutex_);
    reading_ = false;
  }
  pending_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void Load::stop_starting() { starting_ = false; }

// At a fixed rate, whatever the engine's speed: a start that fell behind is made up at once.
void Load::start_loop() {
  const auto begin = std::chrono::steady_clock::now();
  std::int64_t n = 0;
  // First a burst of ten seconds' runs at once, so that the warm-up sees the most the worker will
  // hold: its connection pool opens every connection it may (it opens them as they are wanted and
  // keeps them), its threads' memory arenas grow to their size.
  while (starting_ && n < burst_) start_one(n++);
  while (starting_) {
    const auto due = begin + (n - burst_) * period_;
    std::this_thread::sleep_until(due);
    if (!starting_) break;
    start_one(n++);
    send_due(std::chrono::steady_clock::now());
  }
  // The inbox runs started last still wait for their messages.
  while (!sends_.empty() && reading_) {
    std::this_thread::sleep_for(50ms);
    send_due(std::chrono::steady_clock::now());
  }
}

void Load::start_one(std::int64_t n) {
  const int kind = static_cast<int>(n % kinds);
  const std::string id = fmt::format("{}{}-{}", prefix_, name_of(kind), n);
  ++started_;
  try {
    auto run = client_.start_workflow(name_of(kind), WorkflowId{id}, input_of(kind, n));
    if (kind == 2) sends_.push_back({std::chrono::steady_clock::now() + message_after, id, message_of(n)});
    {
      std::lock_guard lock(mutex_);
      pending_[kind].push_back({std::move(run), kind, n, std::chrono::steady_clock::now()});
    }
    pending_cv_.notify_all();
  } catch (const std::exception& e) {
    fail(fmt::format("{}: the start failed: {}", id, e.what()));
  }
}

void Load::send_due(std::chrono::steady_clock::time_point now) {
  while (!sends_.empty() && sends_.front().due <= now) {
    const Send s = std::move(sends_.front());
    sends_.pop_front();
    try {
      client_.send(WorkflowId{s.workflow_id}, "item", s.text);
    } catch (const std::exception& e) {
      fail(fmt::format("{}: the message was refused: {}", s.workflow_id, e.what()));
    }
  }
}

void Load::read_loop(int kind) {
  auto& pending = pending_[kind];
  for (;;) {
    std::unique_lock lock(mutex_);
    pending_cv_.wait(lock, [&] { return !pending.empty() || !reading_; });
    if (pending.empty()) return;
    Pending p = std::move(pending.front());
    pending.pop_front();
    lock.unlock();
    read_one(p);
  }
}

void Load::read_one(const Pending& p) {
  try {
    Json result;
    for (;;) {  // until the run ends, or the load is torn down (a run still running is a failure then)
      try {
        result = p.run.result_json(1s);
        break;
      } catch (const Timeout&) {
        if (!reading_) throw;
      }
    }
    if (!right_result(p.kind, p.n, result)) {
      fail(fmt::format("{}: returned {}", p.run.id().str(), result.dump()));
      return;
    }
    latency_ms_ +=
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - p.started).count();
    ++completed_;
  } catch (const std::exception& e) {
    fail(fmt::format("{}: {}", p.run.id().str(), e.what()));
  }
}

void Load::fail(const std::string& what) {
  std::lock_guard lock(mutex_);
  if (failures_.size() < failures_kept) failures_.push_back(what);
  ++failed_;
}

bool Load::drain(std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (completed_ + failed_ < started_) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(100ms);
  }
  return true;
}

Load::Counts Load::counts() const { return {started_, completed_, failed_, latency_ms_}; }

std::vector<std::string> Load::failures() const {
  std::lock_guard lock(mutex_);
  return failures_;
}

}  // namespace durable::soak
