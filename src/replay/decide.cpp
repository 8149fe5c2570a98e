#include "replay/decide.hpp"

#include "journal/events.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "base/exceptions.hpp"
#include "replay/replay.hpp"

namespace durable::detail {

namespace {

// One of the run's own events (no step): how it ended.
pg::NewEvent run_event(const journal::EventData& data) {
  return {journal::kind_of(data), -1, "", journal::encode(data)};
}

// The event that ends a run as decision `d` ends it.
pg::NewEvent end_event(const Decisions& d) {
  switch (d.status) {
    case journal::RunStatus::completed: return run_event(journal::WorkflowCompleted{d.result});
    case journal::RunStatus::continued: return run_event(journal::WorkflowContinued{d.next_input, d.next_run_id});
    case journal::RunStatus::cancelled:
      return run_event(journal::WorkflowCancelled{d.error_type, d.error_message, std::nullopt});
    default: return run_event(journal::WorkflowFailed{d.error_type, d.error_message});
  }
}

}  // namespace

Decisions decide(const Registry& registry, const JournalCache& journal, const std::string& workflow_id,
                 std::int64_t now_us, const Inbox& inbox, const ChildIds& ids, OnNondeterminism on_nondeterminism) {
  const WorkflowDefinition& def = registry.workflow(journal.name);
  Replay replay(workflow_id, journal.name, journal, now_us, registry, inbox, ids);
  WorkflowContext ctx = replay.context();
  Decisions d;
  auto fail = [&](std::string type, std::string message) {
    d.status = journal::RunStatus::failed;
    d.error_type = std::move(type);
    d.error_message = std::move(message);
  };
  try {
    Json result = def.run(ctx, journal.input);
    if (!replay.suspended() && !replay.nondeterminism()) {
      check_payload(result, fmt::format("the result of workflow '{}'", workflow_id));
      d.status = journal::RunStatus::completed;
      d.result = std::move(result);
    }
  } catch (const Suspend&) {
  } catch (const ContinueAsNew&) {
  } catch (const WorkflowCancelled& e) {
    if (!replay.suspended() && !replay.nondeterminism()) {
      fail(error_info(e).type, replay.cancel_thrown() ? e.reason() : e.what());
      // The cancel it was told of escaped the code: the run ends cancelled (its message the reason).
      if (replay.cancel_thrown()) d.status = journal::RunStatus::cancelled;
    }
  } catch (...) {
    if (!replay.suspended() && !replay.nondeterminism()) {
      ErrorInfo error = current_error();
      fail(error.type, error.message);
    }
  }
  if (!replay.suspended()) replay.check_end(replay.next_run ? "continue_as_new" : "the run's end");
  // (Only once every id and topic it wanted was read: a divergence before may come of those.)
  if (replay.nondeterminism() && on_nondeterminism == OnNondeterminism::block && replay.wanted_ids.empty() &&
      replay.wanted_topics.empty()) {
    d.blocked = *replay.nondeterminism();  // and nothing else: the journal stays as it is
    return d;
  }
  if (replay.next_run && !replay.suspended() && !replay.nondeterminism()) {
    d.status = journal::RunStatus::continued;  // however the code went on after continue_as_new
    d.error_type.clear();
    d.error_message.clear();
    d.next_run_id = replay.next_run->first;
    d.next_input = std::move(replay.next_run->second);
    d.result = {{"continued_as", d.next_run_id}};
  }
  // Kept by the replay even when the code swallowed the exception.
  if (replay.nondeterminism()) fail(error_info(*replay.nondeterminism()).type, replay.nondeterminism()->what());

  d.events = std::move(replay.events);
  d.log_lines = std::move(replay.log_lines);
  d.received = std::move(replay.received);
  d.wanted_topics = std::move(replay.wanted_topics);
  d.wanted_ids = std::move(replay.wanted_ids);
  d.children = std::move(replay.children);
  d.dropped = std::move(replay.dropped);
  for (auto& [key, set] : replay.published) d.published.push_back({key, std::move(set.first), set.second});
  if (!d.complete()) {
    d.status = journal::RunStatus::running;  // not to be committed: the caller reads what it wants and decides again
    return d;
  }
  if (!d.ended()) {
    d.tasks = std::move(replay.tasks);
    d.wake_at_us = replay.wake_at_us();
    return d;
  }
  // An ended run starts no new activities: those it scheduled without awaiting are written
  // dropped (cancelled, never run). Their events stay, so its steps stay consecutive for every
  // reader of the journal, and a resume finds their tasks to schedule again.
  d.tasks = std::move(replay.tasks);
  for (pg::NewTask& task : d.tasks) task.dropped = true;
  d.events.push_back(end_event(d));
  return d;
}

void write_log_lines(const std::vector<spdlog::details::log_msg_buffer>& lines) {
  spdlog::logger* target = spdlog::default_logger_raw();
  for (const auto& line : lines) {
    target->log(line.time, line.source, line.level,
                fmt::format("[{}] {}", fmt::string_view(line.logger_name.data(), line.logger_name.size()),
                            fmt::string_view(line.payload.data(), line.payload.size())));
  }
}

}  // namespace durable::detail
