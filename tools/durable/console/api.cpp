#include "api.hpp"

#include "queue_fields.hpp"
#include "statuses.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <durable/errors.hpp>
#include <durable/stats.hpp>
#include <limits>

namespace durable::console::detail {
namespace {

// Times travel as milliseconds since the epoch: the page formats them in the viewer's zone.
Json millis(TimePoint t) { return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count(); }
Json millis(const std::optional<TimePoint>& t) { return t ? millis(*t) : Json(); }

std::string param(const Params& params, const std::string& key) {
  const auto it = params.find(key);
  return it == params.end() ? std::string{} : it->second;
}

int int_param(const std::string& value, const std::string& what, int fallback) {
  if (value.empty()) return fallback;
  try {
    std::size_t used = 0;
    const int n = std::stoi(value, &used);
    if (used == value.size()) return n;
  } catch (const std::logic_error&) {  // not a number, or out of range: refused below
  }
  throw InvalidArgument(what + " must be a whole number, not '" + value + "'");
}

RunFilter filter_of(const Params& params) {
  RunFilter filter;
  const std::string statuses = param(params, "status");
  for (std::size_t start = 0; start < statuses.size();) {
    auto end = statuses.find(',', start);
    if (end == std::string::npos) end = statuses.size();
    if (end > start) filter.statuses.push_back(parse_status(statuses.substr(start, end - start)));
    start = end + 1;
  }
  filter.workflow_name = param(params, "name");
  filter.id_prefix = param(params, "prefix");
  filter.blocked_only = param(params, "blocked") == "1";
  return filter;
}

Json summary(const RunSummary& r) {
  return {{"workflow_id", r.workflow_id},
          {"run_id", r.run_id},
          {"workflow_name", r.workflow_name},
          {"status", to_string(r.status)},
          {"latest", r.latest},
          {"started_by", to_string(r.started_by)},
          {"origin", r.origin},
          {"app_version", r.app_version},
          {"blocked", r.blocked},
          {"created_at", millis(r.created_at)},
          {"updated_at", millis(r.updated_at)},
          {"ended_at", millis(r.ended_at)}};
}

std::string required_string(const Json& body, const char* key) {
  const auto it = body.find(key);
  if (it == body.end() || !it->is_string()) throw InvalidArgument(std::string("the request needs \"") + key + "\"");
  return it->get<std::string>();
}

// The action's body checked, and who does it and why: the reason is required, for the audit trail.
OperatorAction operator_action(const Json& body, const std::string& actor) {
  if (!body.is_object()) throw InvalidArgument("the request body must be a JSON object");
  OperatorAction action{actor, required_string(body, "reason")};
  if (std::all_of(action.reason.begin(), action.reason.end(), [](unsigned char c) { return std::isspace(c); })) {
    throw InvalidArgument("a reason is required: say why, it goes to the audit trail");
  }
  return action;
}

// A queue in the fields of `durable queues list --json`, its pause time in milliseconds as the
// console's times are.
Json queue_json(const QueueInfo& q) { return console::queue_json(q, millis(q.paused_at)); }

// A fork's "from_step": a whole number from 0 to INT_MAX, checked before it is narrowed (a
// plain get<int>() would fork 4294967297 from step 1).
int step_of(const Json& body) {
  const auto step = body.find("from_step");
  const auto bad = [] { return InvalidArgument("a fork needs \"from_step\", a whole number from 0 to 2147483647"); };
  if (step == body.end() || !step->is_number_integer()) throw bad();
  if (step->is_number_unsigned()) {
    if (step->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) throw bad();
  } else if (step->get<std::int64_t>() < 0 || step->get<std::int64_t>() > std::numeric_limits<int>::max()) {
    throw bad();
  }
  return step->get<int>();
}

}  // namespace

Json runs_page(Runs& runs, const Params& params) {
  RunQuery query{.filter = filter_of(params),
                 .limit = int_param(param(params, "limit"), "limit", 50),
                 .cursor = param(params, "cursor")};
  const RunPage page = runs.list(query);
  Json list = Json::array();
  for (const auto& r : page.runs) list.push_back(summary(r));
  return {{"runs", std::move(list)}, {"next_cursor", page.next_cursor}};
}

Json run_counts(Runs& runs, const Params& params) {
  // Exact up to 10,000 a status; beyond, the page says "10,000+" (an exact count of millions of
  // runs would cost the page its time budget).
  constexpr std::int64_t exact_up_to = 10'000;
  return {{"counts", counts_json(runs.count_by_status(filter_of(params), exact_up_to))}, {"capped_at", exact_up_to}};
}

Json run(Runs& runs, const RunId& run_id) {
  const RunInfo info = runs.get(run_id);
  Json out = summary(info);
  out.update({{"input", info.input},
              {"result", info.result},
              {"error_type", info.error_type},
              {"error_message", info.error_message},
              {"journal_length", info.journal_length},
              {"activities", info.activities},
              {"attempts", info.attempts},
              {"failed_attempts", info.failed_attempts},
              {"parent_run_id", info.parent_run_id},
              {"forked_from_run", info.forked_from_run},
              {"forked_from_step", info.forked_from_step},
              {"continued_from_run", info.continued_from_run},
              {"continued_as_run", info.continued_as_run},
              {"blocked_at", millis(info.blocked_at)},
              {"blocked_by", nullptr}});
  if (info.blocked_by) {
    const auto& b = *info.blocked_by;
    out["blocked_by"] = {{"step", b.divergence.step},    {"journaled", b.divergence.journaled},
                         {"asked", b.divergence.asked},  {"message", b.divergence.message},
                         {"app_version", b.app_version}, {"times", b.times}};
  }
  const RunPage children = runs.list({.filter = {.parent_run_id = info.run_id}, .limit = 100});
  Json list = Json::array();
  for (const auto& child : children.runs) list.push_back(summary(child));
  out["children"] = std::move(list);
  out["more_children"] = !children.next_cursor.empty();
  return out;
}

Json history(Runs& runs, const Params& params) {
  const History page = runs.history(RunId{param(params, "id")},
                                    {.from_seq = int_param(param(params, "from_seq"), "from_seq", 0), .limit = 500});
  Json events = Json::array();
  for (const auto& e : page.events) {
    events.push_back(
        {{"seq", e.seq}, {"kind", e.kind}, {"step", e.step}, {"name", e.name}, {"at", millis(e.at)}, {"data", e.data}});
  }
  Json attempts = Json::array();
  for (const auto& a : page.attempts) {
    attempts.push_back({{"step", a.step},
                        {"activity", a.activity},
                        {"attempt", a.attempt},
                        {"started_at", millis(a.started_at)},
                        {"ended_at", millis(a.ended_at)},
                        {"outcome", a.outcome},
                        {"error_type", a.error_type},
                        {"error_message", a.error_message},
                        {"retry_at", millis(a.retry_at)}});
  }
  return {{"events", std::move(events)},
          {"attempts", std::move(attempts)},
          {"next_seq", page.next_seq ? Json(*page.next_seq) : Json()},
          // Running attempts are drawn up to now: the server's clock, as the database's is not public.
          {"now", millis(std::chrono::system_clock::now())}};
}

Json schedules(Schedules& schedules) {
  Json list = Json::array();
  for (const auto& s : schedules.list()) {
    list.push_back({{"id", s.id},
                    {"workflow", s.spec.workflow},
                    {"cron", s.spec.cron},
                    {"time_zone", s.spec.time_zone},
                    {"misfire", to_string(s.spec.misfire)},
                    {"next_fire", millis(s.next_fire)},
                    {"paused", s.paused},
                    {"fires_started", s.fires_started},
                    {"fires_dropped", s.fires_dropped}});
  }
  return {{"schedules", std::move(list)}};
}

Json queues(Queues& queues) {
  Json list = Json::array();
  for (const auto& q : queues.list()) list.push_back(queue_json(q));
  Json paused = Json::array();
  for (const auto& t : queues.paused_types()) paused.push_back(console::paused_type_json(t, millis(t.paused_at)));
  return {{"queues", std::move(list)}, {"paused_types", std::move(paused)}};
}

Json queue(Queues& queues, const std::string& name) {
  Json out = queue_json(queues.get(name));
  Json keys = Json::array();
  for (const auto& k : queues.keys(name, 20)) {
    keys.push_back(console::queue_key_json(k));
  }
  out["keys"] = std::move(keys);
  return out;
}

Json overview(Runs& runs, Schedules& schedules) {
  using std::chrono::hours;
  const Stats stats = runs.stats();
  // 24 buckets of an hour, the last one the hour now is in. One count per bucket for now: the
  // management API has no grouped statistics.
  const auto this_hour = std::chrono::floor<hours>(std::chrono::system_clock::now());
  Json buckets = Json::array();
  for (int i = 23; i >= 0; --i) {
    const TimePoint from = this_hour - hours{i};
    const auto counts = runs.count_by_status({.created_from = from, .created_until = from + hours{1}});
    buckets.push_back({{"from", millis(from)}, {"counts", counts_json(counts)}});
  }
  Json oldest;  // null: nothing is running
  if (const auto& r = stats.oldest_running) {
    oldest = {{"workflow_id", r->workflow_id},
              {"run_id", r->run_id},
              {"workflow_name", r->workflow_name},
              {"created_at", millis(r->created_at)}};
  }
  Json activity_queues = Json::array();
  for (const auto& q : stats.activity_queues) {
    activity_queues.push_back({{"activity", q.activity},
                               {"ready", q.ready},
                               {"delayed", q.delayed},
                               {"running", q.running},
                               {"oldest_ready_seconds", q.oldest_ready_seconds}});
  }
  Json workflow_queues = Json::array();
  for (const auto& q : stats.workflow_queues) {
    workflow_queues.push_back(
        {{"workflow", q.workflow}, {"waiting", q.waiting}, {"oldest_waiting_seconds", q.oldest_waiting_seconds}});
  }
  Json engines = Json::array();
  for (const auto& i : stats.instances) {
    engines.push_back({{"owner", i.owner},
                       {"instance", i.instance},
                       {"app_version", i.app_version},
                       {"activity_capacity", i.activity_capacity},
                       {"workflow_capacity", i.workflow_capacity},
                       {"activities_leased", i.activities_leased},
                       {"saturation", i.saturation ? Json(*i.saturation) : Json()},
                       {"started_at", millis(i.started_at)},
                       {"seen_at", millis(i.seen_at)},
                       {"alive", i.alive}});
  }
  return {{"at", millis(stats.at)},
          {"counts", counts_json(stats.runs_by_status)},
          {"blocked", stats.blocked},
          {"schedules", schedules.list().size()},
          {"queues", stats.queues.size()},
          {"hours", std::move(buckets)},
          {"oldest_running", std::move(oldest)},
          {"activity_queues", std::move(activity_queues)},
          {"workflow_queues", std::move(workflow_queues)},
          {"engines", std::move(engines)}};
}

Json act(Runs& runs, const std::string& verb, const Json& body, const std::string& actor) {
  const OperatorAction action = operator_action(body, actor);
  const RunId run_id{required_string(body, "run_id")};
  if (verb == "cancel") return {{"changed", runs.cancel(run_id, action)}};
  if (verb == "terminate") return {{"changed", runs.terminate(run_id, action)}};
  const auto started = [](const UntypedWorkflowHandle& h) {
    return Json{{"changed", true}, {"workflow_id", h.id()}, {"run_id", h.run_id()}};
  };
  if (verb == "resume") return started(runs.resume(run_id, action));
  if (verb == "fork") {
    const auto id = body.find("workflow_id");
    const ForkOptions options{.workflow_id =
                                  id != body.end() && id->is_string() ? id->get<WorkflowId>() : WorkflowId{}};
    return started(runs.fork(run_id, step_of(body), action, options));
  }
  throw InvalidArgument("unknown action '" + verb + "': cancel, resume, fork or terminate");
}

Json act_on_queue(Queues& queues, const std::string& verb, const Json& body, const std::string& actor) {
  const OperatorAction action = operator_action(body, actor);
  const std::string name = required_string(body, "queue");
  if (verb == "pause-queue") {
    queues.pause(name, action);
    return {{"queue", name}, {"paused", true}};
  }
  if (verb == "resume-queue") {
    queues.resume(name, action);
    return {{"queue", name}, {"paused", false}};
  }
  throw InvalidArgument("unknown queue action '" + verb + "': pause-queue or resume-queue");
}

}  // namespace durable::console::detail
