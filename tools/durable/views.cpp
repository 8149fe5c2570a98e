#include "views.hpp"

#include <fmt/format.h>

#include "console/queue_fields.hpp"
#include "text.hpp"

namespace durable::cli {

namespace {
Json time_or_null(const std::optional<TimePoint>& t) { return t ? Json(iso_time(*t)) : Json(); }
}  // namespace

Json to_json(const RunSummary& r) {
  return {{"workflow_id", r.workflow_id},
          {"run_id", r.run_id},
          {"workflow_name", r.workflow_name},
          {"status", to_string(r.status)},
          {"latest", r.latest},
          {"started_by", to_string(r.started_by)},
          {"origin", r.origin},
          {"app_version", r.app_version},
          {"blocked", r.blocked},
          {"created_at", iso_time(r.created_at)},
          {"updated_at", iso_time(r.updated_at)},
          {"ended_at", time_or_null(r.ended_at)}};
}

Json to_json(const RunInfo& r) {
  Json out = to_json(static_cast<const RunSummary&>(r));
  out.update({{"input", r.input},
              {"result", r.result},
              {"error_type", r.error_type},
              {"error_message", r.error_message},
              {"journal_length", r.journal_length},
              {"activities", r.activities},
              {"attempts", r.attempts},
              {"failed_attempts", r.failed_attempts},
              {"parent_run_id", r.parent_run_id},
              {"forked_from_run", r.forked_from_run},
              {"forked_from_step", r.forked_from_step},
              {"continued_from_run", r.continued_from_run},
              {"continued_as_run", r.continued_as_run},
              {"blocked_at", time_or_null(r.blocked_at)},
              {"blocked_by", nullptr}});
  if (r.blocked_by) {
    const BlockedRun& b = *r.blocked_by;
    out["blocked_by"] = {{"step", b.divergence.step},    {"journaled", b.divergence.journaled},
                         {"asked", b.divergence.asked},  {"message", b.divergence.message},
                         {"app_version", b.app_version}, {"times", b.times}};
  }
  return out;
}

Json to_json(const HistoryEvent& e) {
  return {{"seq", e.seq},   {"kind", e.kind},       {"step", e.step},
          {"name", e.name}, {"at", iso_time(e.at)}, {"data", e.data}};
}

Json to_json(const ActivityAttempt& a) {
  return {{"step", a.step},
          {"activity", a.activity},
          {"attempt", a.attempt},
          {"started_at", time_or_null(a.started_at)},
          {"ended_at", time_or_null(a.ended_at)},
          {"outcome", a.outcome},
          {"error_type", a.error_type},
          {"error_message", a.error_message},
          {"retry_at", time_or_null(a.retry_at)}};
}

Json to_json(const ScheduleInfo& s) {
  return {{"id", s.id},
          {"workflow", s.spec.workflow},
          {"input", s.spec.input},
          {"cron", s.spec.cron},
          {"time_zone", s.spec.time_zone},
          {"misfire", to_string(s.spec.misfire)},
          {"catchup_limit", s.spec.catchup_limit},
          {"misfire_grace_ms", std::chrono::duration_cast<std::chrono::milliseconds>(s.spec.misfire_grace).count()},
          {"paused", s.paused},
          {"next_fire", iso_time(s.next_fire)},
          {"fires_started", s.fires_started},
          {"fires_dropped", s.fires_dropped}};
}

Json to_json(const QueueInfo& q) { return console::queue_json(q, q.paused_at ? Json(iso_time(q.paused_at)) : Json()); }

Json to_json(const QueueKeyInfo& k) { return console::queue_key_json(k); }

Json to_json(const Stats& s) {
  Json activities = Json::array(), workflows = Json::array(), instances = Json::array();
  for (const auto& q : s.activity_queues) {
    activities.push_back({{"activity", q.activity},
                          {"ready", q.ready},
                          {"delayed", q.delayed},
                          {"running", q.running},
                          {"oldest_ready_seconds", q.oldest_ready_seconds}});
  }
  for (const auto& q : s.workflow_queues) {
    workflows.push_back(
        {{"workflow", q.workflow}, {"waiting", q.waiting}, {"oldest_waiting_seconds", q.oldest_waiting_seconds}});
  }
  for (const auto& i : s.instances) {
    instances.push_back({{"owner", i.owner},
                         {"instance", i.instance},
                         {"app_version", i.app_version},
                         {"activity_capacity", i.activity_capacity},
                         {"workflow_capacity", i.workflow_capacity},
                         {"activities_leased", i.activities_leased},
                         {"saturation", i.saturation ? Json(*i.saturation) : Json()},
                         {"started_at", time_or_null(i.started_at)},
                         {"seen_at", time_or_null(i.seen_at)},
                         {"alive", i.alive}});
  }
  Json queues = Json::array();
  for (const auto& q : s.queues) queues.push_back(to_json(q));
  return {{"at", iso_time(s.at)},
          {"runs_by_status", counts_json(s.runs_by_status)},
          {"blocked", s.blocked},
          {"oldest_running", s.oldest_running ? to_json(*s.oldest_running) : Json()},
          {"activity_queues", activities},
          {"workflow_queues", workflows},
          {"queues", queues},
          {"instances", instances}};
}

Json to_json(const AuditEntry& e) {
  return {{"id", e.id},         {"at", iso_time(e.at)},         {"actor", e.actor},   {"action", e.action},
          {"reason", e.reason}, {"workflow_id", e.workflow_id}, {"run_id", e.run_id}, {"details", e.details}};
}

}  // namespace durable::cli
