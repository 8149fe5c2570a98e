#include "engine/history_export.hpp"

#include <fmt/format.h>

#include <chrono>
#include <limits>
#include <variant>

#include "durable/errors.hpp"
#include "durable/versioning.hpp"
#include "journal/events.hpp"

namespace durable::detail {

Json export_history(pg::RunStore& store, const std::string& run_id) {
  const auto run = store.get(run_id);
  if (!run) throw WorkflowNotFound::run(RunId{run_id});
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

namespace {

// An integer field of an imported event, checked: a float, a string or a number beyond the range
// would be converted by a plain cast (undefined behaviour) or cut short (step 2^32 + 1 as step 1).
std::int64_t integer(const Json& value, const std::string& field, std::int64_t min, std::int64_t max) {
  const bool fits = value.is_number_integer() &&
                    !(value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(max));
  if (!fits || value.get<std::int64_t>() < min || value.get<std::int64_t>() > max) {
    throw InvalidHistory(
        fmt::format("its {} is {}: it must be an integer from {} to {}", field, value.dump(), min, max));
  }
  return value.get<std::int64_t>();
}

constexpr std::int64_t int_max = std::numeric_limits<int>::max();
constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
// The latest microsecond a std::chrono::system_clock::time_point holds (the year 2262): the replay
// turns these times into time_points (ctx.now()) and adds timers to them, so a later one would
// overflow there.
constexpr std::int64_t clock_max_us =
    std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::duration::max()).count();

// What the vocabulary's types hold but the replay cannot take from an untrusted history: times
// it turns into time_points, step numbers below -1, a duration it negates. The types themselves
// are checked by journal::decode.
struct NarrowerRanges {
  static void time(const char* field, std::int64_t us) { integer(us, field, -clock_max_us, clock_max_us); }
  static void steps(const char* field, const std::vector<int>& steps) {
    for (int step : steps) integer(step, field, 0, int_max);
  }
  static void duration(const char* field, const std::optional<std::int64_t>& ms) {
    if (ms) integer(*ms, field, -int64_max, int64_max);
  }
  void operator()(const journal::WorkflowStarted& d) const { integer(d.depth.value_or(0), "data.depth", -1, int_max); }
  void operator()(const journal::ActivityCompleted& d) const {
    integer(d.attempts, "data.attempts", -1, int_max);
    if (d.started_us) time("data.started_us", *d.started_us);
  }
  void operator()(const journal::ActivityFailed& d) const { integer(d.attempts, "data.attempts", -1, int_max); }
  void operator()(const journal::TimerStarted& d) const {
    time("data.fire_at_us", d.fire_at_us);
    duration("data.duration_ms", d.duration_ms);
  }
  void operator()(const journal::ReceiveStarted& d) const {
    time("data.fire_at_us", d.fire_at_us);
    duration("data.timeout_ms", d.timeout_ms);
  }
  void operator()(const journal::WaitChosen& d) const { integer(d.index, "data.index", -1, int_max); }
  void operator()(const journal::CancelDelivered& d) const {
    integer(d.at_step, "data.at_step", -1, int_max);
    integer(d.awaited, "data.awaited", -1, int_max);
    steps("data.dropped[]", d.dropped);
  }
  void operator()(const journal::WorkflowResumed& d) const { steps("data.retry_steps[]", d.retry_steps); }
  template <typename Other>
  void operator()(const Other&) const {}
};

// An imported event's data, read by the one reader of the journal (journal::decode) and held to
// the ranges above.
void check_data(journal::EventKind kind, const Json& data) {
  if (!data.is_object()) throw InvalidHistory(fmt::format("its data is {}: it must be an object", data.dump()));
  journal::EventData typed;
  try {
    typed = journal::decode(kind, data);
  } catch (const Error& e) {
    throw InvalidHistory(e.what());
  }
  std::visit(NarrowerRanges{}, typed);
}

}  // namespace

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
      event.seq = static_cast<int>(integer(e.at("seq"), "seq", 0, int_max));
      event.kind = journal::event_kind_from_text(e.at("kind").get<std::string>());
      event.step = static_cast<int>(integer(e.value("step", Json(-1)), "step", -1, int_max));
      event.name = e.value("name", "");
      event.data = e.value("data", Json::object());
      check_data(event.kind, event.data);
      if (event.kind == journal::EventKind::side_effect && event.name == "now") {
        integer(event.data.value("value", Json()), "data.value (a time in microseconds)", -clock_max_us, clock_max_us);
      }
      out.last_event_us = std::max(out.last_event_us, integer(e.value("at_us", Json(0)), "at_us", 0, clock_max_us));
      out.events.push_back(std::move(event));
    }
  } catch (const std::exception& e) {  // InvalidHistory from the checks above, or a JSON type error
    throw InvalidHistory(
        fmt::format("history of run '{}' is malformed at event {}: {}", out.run_id, out.events.size(), e.what()));
  }
  if (out.events.empty() || out.events.front().kind != journal::EventKind::workflow_started) {
    throw InvalidHistory(fmt::format("history of run '{}' does not start with its workflow_started event", out.run_id));
  }
  return out;
}

}  // namespace durable::detail
