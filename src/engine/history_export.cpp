#include "engine/history_export.hpp"

#include <fmt/format.h>

#include "durable/errors.hpp"
#include "durable/versioning.hpp"

namespace durable::detail {

Json export_history(pg::RunStore& store, const std::string& run_id) {
  const auto run = store.get(run_id);
  if (!run) throw WorkflowNotFound::run(run_id);
  Json events = Json::array();
  for (int from = 0;;) {
    const History page = store.history(run_id, from, 1000);
    for (const HistoryEvent& e : page.events) {
      const auto at_us = std::chrono::duration_cast<std::chrono::microseconds>(e.at.time_since_epoch()).count();
      events.push_back(
          {{"seq", e.seq}, {"kind", e.kind}, {"step", e.step}, {"name", e.name}, {"at_us", at_us}, {"data", e.data}});
    }
    if (!page.next_seq) break;
    from = *page.next_seq;
  }
  return {{"format", history_format},        {"version", history_format_version},   {"workflow_id", run->workflow_id},
          {"run_id", run->run_id},           {"workflow_name", run->workflow_name}, {"status", to_string(run->status)},
          {"app_version", run->app_version}, {"events", std::move(events)}};
}

ImportedHistory import_history(const Json& history) {
  if (!history.is_object() || history.value("format", Json()) != history_format) {
    throw InvalidHistory(fmt::format(
        "this is not an exported history: expected a JSON object with \"format\": \"{}\" (Runs::export_history)",
        history_format));
  }
  const Json version = history.value("version", Json());
  if (version != history_format_version) {
    throw InvalidHistory(
        fmt::format("history format version {} is unknown: this build reads version {}; export it "
                    "again with this build, or replay it with the build that wrote it",
                    version.dump(), history_format_version));
  }
  ImportedHistory out;
  try {
    out.workflow_id = history.at("workflow_id").get<std::string>();
    out.run_id = history.at("run_id").get<std::string>();
    out.workflow_name = history.at("workflow_name").get<std::string>();
    out.status = history.value("status", "");
    for (const Json& e : history.at("events")) {
      pg::JournalEvent event;
      event.seq = e.at("seq").get<int>();
      event.kind = pg::event_kind_from_text(e.at("kind").get<std::string>());
      event.step = e.value("step", -1);
      event.name = e.value("name", "");
      event.data = e.value("data", Json::object());
      out.last_event_us = std::max(out.last_event_us, e.value("at_us", std::int64_t{0}));
      out.events.push_back(std::move(event));
    }
  } catch (const InvalidHistory&) {
    throw;
  } catch (const std::exception& e) {
    throw InvalidHistory(
        fmt::format("history of run '{}' is malformed at event {}: {}", out.run_id, out.events.size(), e.what()));
  }
  if (out.events.empty() || out.events.front().kind != pg::EventKind::workflow_started) {
    throw InvalidHistory(fmt::format("history of run '{}' does not start with its workflow_started event", out.run_id));
  }
  return out;
}

}  // namespace durable::detail
