#include "pg/rows.hpp"

#include "pg/statements.hpp"
#include "pg/store.hpp"

namespace durable::pg::rows {

Json json_or_null(const pqxx::row& row, const char* column) {
  const auto field = row[column];
  return field.is_null() ? Json() : Json::parse(field.c_str());
}

ClaimedWorkflow claimed_workflow(const pqxx::row& row) {
  ClaimedWorkflow w;
  w.workflow_id = row["workflow_id"].as<std::string>();
  w.run_id = row["run_id"].as<std::string>();
  w.name = row["name"].as<std::string>();
  w.next_seq = row["next_seq"].as<int>();
  w.lease_token = row["lease_token"].as<std::int64_t>();
  w.now_us = row["now_us"].as<std::int64_t>();
  if (!row["start_data"].is_null()) w.start_data = Json::parse(row["start_data"].c_str());
  w.replayed_seq = row["replayed_seq"].as<int>();
  return w;
}

ClaimedTask claimed_task(const pqxx::row& row) {
  ClaimedTask t;
  t.task_id = row["task_id"].as<std::int64_t>();
  t.run_id = row["run_id"].as<std::string>();
  t.workflow_id = row["workflow_id"].as<std::string>();
  t.step = row["step"].as<int>();
  t.name = row["name"].as<std::string>();
  t.input = Json::parse(row["input"].c_str());
  t.options = options_from_json(Json::parse(row["options"].c_str()));
  t.attempt = row["attempt"].as<int>();
  t.attempt_base = row["attempt_base"].as<int>();
  t.lease_token = row["lease_token"].as<std::int64_t>();
  // The status it was claimed from: running means the previous attempt's lease ran out.
  t.after_lease_expiry = task_status_from_text(row["was"].as<std::string>()) == TaskStatus::running;
  t.last_heartbeat = json_or_null(row, "heartbeat");
  t.claimed_at_us = row["claimed_at_us"].as<std::int64_t>();
  t.first_started_at_us = row["first_started_us"].as<std::int64_t>();
  if (t.after_lease_expiry && !row["lease_lost_us"].is_null()) {
    t.lease_lost_at_us = row["lease_lost_us"].as<std::int64_t>();
  }
  return t;
}

JournalEvent journal_event(const pqxx::row& row) {
  return {row["seq"].as<int>(), event_kind_from_text(row["kind"].as<std::string>()), row["step"].as<int>(),
          row["event_name"].as<std::string>(), Json::parse(row["data"].c_str())};
}

WorkflowRow workflow(const pqxx::row& row) {
  WorkflowRow w;
  w.workflow_id = row["workflow_id"].as<std::string>();
  w.run_id = row["run_id"].as<std::string>();
  w.name = row["name"].as<std::string>();
  w.status = run_status_from_text(row["status"].as<std::string>());
  w.result = json_or_null(row, "result");
  w.error_type = row["error_type"].as<std::string>();
  w.error_message = row["error_message"].as<std::string>();
  return w;
}

namespace {
ScheduleRow schedule(const pqxx::row& row) {
  ScheduleRow r;
  r.id = row["schedule_id"].as<std::string>();
  ScheduleSpec& spec = r.spec;
  spec.workflow = row["workflow_name"].as<std::string>();
  spec.input = Json::parse(row["input"].c_str());
  spec.cron = row["cron"].as<std::string>();
  spec.time_zone = row["time_zone"].as<std::string>();
  spec.misfire = parse_misfire_policy(row["misfire_policy"].as<std::string>());
  spec.catchup_limit = row["catchup_limit"].as<int>();
  spec.misfire_grace = Duration{row["misfire_grace_ms"].as<std::int64_t>()};
  r.next_fire_us = row["next_fire_us"].as<std::int64_t>();
  return r;
}
}  // namespace

ScheduleRow listed_schedule(const pqxx::row& row) {
  ScheduleRow r = schedule(row);
  r.paused = row["paused"].as<bool>();
  r.fires_started = row["fires_started"].as<std::int64_t>();
  r.fires_dropped = row["fires_dropped"].as<std::int64_t>();
  return r;
}

ScheduleRow due_schedule(const pqxx::row& row) {
  ScheduleRow r = schedule(row);
  r.prev_fire_us = row["prev_fire_us"].as<std::int64_t>();
  return r;
}

bool cancel_asked(pqxx::transaction_base& tx, const std::string& run_id, const pqxx::row& request) {
  if (request["requested"].as<int>() == 1) return true;
  const auto found = exec(tx, stmt::read_run, run_id);
  return !found.empty() && found[0]["status"].as<std::string>() == to_text(RunStatus::running);
}

}  // namespace durable::pg::rows
