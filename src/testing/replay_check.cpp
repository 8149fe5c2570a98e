// Replay checks: recorded histories replayed against the current workflow code, writing nothing.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/sealer.hpp"
#include "durable/engine.hpp"
#include "durable/testing.hpp"
#include "engine/engine_access.hpp"
#include "engine/engine_core.hpp"
#include "engine/history_export.hpp"
#include "pg/database.hpp"
#include "replay/decide.hpp"

namespace durable::testing {

namespace {

bool ended(const std::string& status) { return !status.empty() && status != "running"; }

}  // namespace

ReplayResult replay(const Json& history, const Engine& engine) {
  const detail::ImportedHistory h = detail::import_history(history);
  const detail::Registry& registry = detail::EngineAccess::registry(engine);
  if (!registry.workflows.count(h.workflow_name)) {
    throw UnknownWorkflow(
        fmt::format("the history of run {} is of workflow '{}', which the engine given does not "
                    "register: add it (Engine::add) before replaying",
                    h.run_id, h.workflow_name));
  }
  // A history exported without the codec holds encoded values: the engine's codec reads them.
  const detail::Sealer sealer(engine.options().codec);
  std::vector<pg::JournalEvent> events = h.events;
  for (pg::JournalEvent& e : events) sealer.open_fields(e.data, "a value in the exported history");
  detail::JournalCache journal;
  journal.run_id = h.run_id;
  journal.name = h.workflow_name;
  try {
    journal.apply(events);
  } catch (const std::exception& e) {
    throw InvalidHistory(fmt::format("the history of run {} is not a journal durable wrote: {}", h.run_id, e.what()));
  }
  // The clock of its last event: nothing comes due that had not when it was recorded. As a runner
  // does, read what the code wants and decide again: here no message is waiting and every child
  // id is free (what the journal holds of them is replayed from it).
  detail::Inbox inbox;
  detail::ChildIds ids;
  detail::Decisions d;
  for (int round = 0; round < 10; ++round) {
    d = detail::decide(registry, journal, h.workflow_id, h.last_event_us, inbox, ids, OnNondeterminism::block);
    if (d.complete()) break;
    for (const std::string& topic : d.wanted_topics) inbox.topics[topic].complete = true;
    for (const std::string& id : d.wanted_ids) ids.latest[id] = std::nullopt;
  }
  ReplayResult result{h.workflow_id, RunId{h.run_id}, h.workflow_name, std::nullopt};
  if (d.blocked) {
    result.divergence = Divergence{d.blocked->step(), d.blocked->journaled(), d.blocked->asked(), d.blocked->what()};
    return result;
  }
  // A run that ended holds no call after its last: code that makes one would not end it the same
  // way. (Not for a run terminated by an operator, whose code was stopped wherever it was; nor for
  // a patch marker, which a run that ended never replays.)
  const bool terminated = h.status == "cancelled" && !journal.cancel_delivered;
  if (!ended(h.status) || terminated) return result;
  const int steps = static_cast<int>(journal.steps.size());
  for (const pg::NewEvent& e : d.events) {
    if (e.step < steps || e.kind == journal::EventKind::patched) continue;
    const std::string journaled = fmt::format("the run's end (it ended {})", h.status);
    const std::string asked = fmt::format("a new call ({} '{}')", journal::to_text(e.kind), e.name);
    result.divergence =
        Divergence{e.step, journaled, asked,
                   detail::nondeterminism_message(h.workflow_id, h.workflow_name, e.step, journaled, asked)};
    break;
  }
  return result;
}

ReplayResult replay_file(const std::filesystem::path& file, const Engine& engine) {
  std::ifstream in(file);
  if (!in) throw InvalidHistory(fmt::format("history file '{}' cannot be read", file.string()));
  std::stringstream text;
  text << in.rdbuf();
  Json history;
  try {
    history = Json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw InvalidHistory(fmt::format("history file '{}' is not valid JSON: {}", file.string(), e.what()));
  }
  return replay(history, engine);
}

ReplayReport check_replay(const std::string& url, const std::string& schema, const Engine& engine,
                          const ReplayCheckOptions& options) {
  if (options.sample < 1 || options.sample > 100'000) {
    throw InvalidArgument(
        fmt::format("replay check sample {} is out of range: ask for 1 to 100000 runs", options.sample));
  }
  pg::validate_schema_name(schema);
  // No codec here: histories come encoded as stored, and replay() reads them with the engine's.
  pg::Database db(url, schema, 1, "durable/check_replay", {}, pg::SessionPolicy{.migrate = false, .read_only = true});
  ReplayReport report;
  std::optional<std::int64_t> cursor_us;
  std::string cursor_run;
  int listed = 0;
  while (listed < options.sample) {
    const RunPage page = db.runs().list(options.filter, std::min(1000, options.sample - listed), cursor_us, cursor_run);
    for (const RunSummary& run : page.runs) {
      ++listed;
      ReplayResult result;
      try {
        result = replay(detail::export_history(db.runs(), run.run_id.str()), engine);
      } catch (const UnknownWorkflow&) {
        continue;  // another service's workflow
      } catch (const WorkflowNotFound&) {
        continue;  // deleted since it was listed
      } catch (const DatabaseError&) {
        throw;  // the check's failure, not the run's
      } catch (const std::exception& e) {
        // A journal it cannot read or decode is that run's finding: the others are still worth knowing.
        report.unreadable.push_back({run.workflow_id, run.run_id, run.workflow_name, std::nullopt, e.what()});
        continue;
      }
      ++report.replayed;
      if (!result.ok()) report.divergent.push_back(std::move(result));
    }
    if (page.next_cursor.empty() || page.runs.empty()) break;
    cursor_us =
        std::chrono::duration_cast<std::chrono::microseconds>(page.runs.back().created_at.time_since_epoch()).count();
    cursor_run = page.runs.back().run_id.str();
  }
  return report;
}

}  // namespace durable::testing
