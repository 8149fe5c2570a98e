#include "pg/schedule_store.hpp"

#include "base/log.hpp"
#include "base/uuid.hpp"
#include "durable/queue_records.hpp"
#include "pg/audit.hpp"
#include "pg/connection_pool.hpp"
#include "pg/rows.hpp"
#include "pg/statements.hpp"
#include "pg/store_parts.hpp"

namespace durable::pg {

ScheduleStore::ScheduleStore(ConnectionPool& pool, std::string app_version, detail::Sealer sealer)
    : pool_(pool),
      app_version_(std::move(app_version)),
      seal_(std::move(sealer)),
      schedules_channel_(wake_channel(pool.schema(), Wake::schedules)),
      workflows_channel_(wake_channel(pool.schema(), Wake::workflows)) {}

std::int64_t ScheduleStore::db_now_us() { return pg::db_now_us(pool_); }

int ScheduleStore::write(const char* statement, const ScheduleRow& row, const std::string& revision,
                         std::string* revision_before) {
  int written = 0;
  const ScheduleSpec& s = row.spec;
  // Safe to repeat: a create that committed reads its own revision (see create), an update writes the same again.
  pool_.write(statement, [&](pqxx::connection& conn, bool) {
    pqxx::nontransaction tx(conn);
    auto r = exec1(tx, statement, row.id, s.workflow, seal_.sealed_dump(s.input), s.cron, s.time_zone,
                   to_string(s.misfire), s.catchup_limit, s.misfire_grace.count(), row.next_fire_us, row.prev_fire_us,
                   revision, schedules_channel_);
    written = r["written"].as<int>();
    if (revision_before && !r["revision_before"].is_null()) *revision_before = r["revision_before"].as<std::string>();
  });
  return written;
}

bool ScheduleStore::create(const ScheduleRow& row, const std::string& revision) {
  std::string before;
  return write(stmt::create_schedule, row, revision, &before) == 1 || before == revision;
}

bool ScheduleStore::update(const ScheduleRow& row, const std::string& revision) {
  return write(stmt::update_schedule, row, revision, nullptr) == 1;
}

bool ScheduleStore::set_paused(const std::string& id, bool paused, const OperatorAction* action) {
  bool found = false;
  const std::string action_id = detail::random_uuid();
  pool_.write(stmt::pause_schedule, [&](pqxx::connection& conn, bool maybe_committed) {  // a repeat sets the same
    pqxx::work tx(conn);
    if (action && maybe_committed && audited(tx, action_id)) {
      found = true;  // the earlier try committed, its entry with it
      return;
    }
    found = exec1(tx, stmt::pause_schedule, id, paused, schedules_channel_)["written"].as<int>() == 1;
    if (found && action) {
      insert_audit(tx, seal_, *action, action_id, paused ? "schedule_pause" : "schedule_resume", "", "",
                   {{"schedule_id", id}});
    }
    tx.commit();
  });
  return found;
}

bool ScheduleStore::remove(const std::string& id, const OperatorAction* action) {
  bool found = false;
  const std::string action_id = detail::random_uuid();
  pool_.write(stmt::delete_schedule, [&](pqxx::connection& conn, bool maybe_committed) {
    pqxx::work tx(conn);
    found = !exec(tx, stmt::delete_schedule, id).empty();
    if (found && action) {
      insert_audit(tx, seal_, *action, action_id, "schedule_delete", "", "", {{"schedule_id", id}});
    }
    // After a lost answer, a schedule gone now was deleted by the earlier try (audited with it).
    found = found || maybe_committed;
    tx.commit();
  });
  return found;
}

std::vector<ScheduleRow> ScheduleStore::read(const std::optional<std::string>& id) {
  std::vector<ScheduleRow> rows;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    rows.clear();
    const char* filter = id ? id->c_str() : nullptr;  // NULL reads them all
    for (const auto& r : exec(tx, stmt::read_schedules, filter)) {
      rows.push_back(rows::listed_schedule(r));
      rows.back().spec.input = seal_.open(std::move(rows.back().spec.input), "a schedule's input");
    }
  });
  return rows;
}

ScheduleStore::Fired ScheduleStore::fire_due(
    int limit, const std::function<ScheduleAdvance(const ScheduleRow& row, std::int64_t now_us)>& plan) {
  Fired fired;
  // Safe to repeat after a lost commit: the schedule moved on (nothing is due) or, if not, the
  // runs' ids are taken and nothing starts twice.
  pool_.write("fire_due", [&](pqxx::connection& conn, bool) {
    fired = {};
    pqxx::work tx(conn);
    for (const auto& r : exec(tx, stmt::due_schedules, limit)) {
      const ScheduleRow row = rows::due_schedule(r);  // its input as stored: the run starts with it so
      const auto now_us = r["now_us"].as<std::int64_t>();
      ScheduleAdvance advance;
      try {
        advance = plan(row, now_us);
      } catch (const std::exception& e) {
        // Left as it is, so it is tried again; the other schedules go on.
        detail::logger().error("schedule '{}' cannot fire: {}", row.id, e.what());
        continue;
      }
      int started = 0;
      for (const auto& start : advance.starts) {
        const store_parts::NewRun run{start.workflow_id,
                                      start.run_id,
                                      row.spec.workflow,
                                      row.spec.input.dump(),
                                      workflows_channel_,
                                      start.context.dump(),
                                      "",
                                      0,
                                      0,
                                      app_version_};
        RunOrigin origin;
        origin.started_by = "schedule";
        origin.origin = row.id;
        started += store_parts::exec_start(tx, run, origin)["inserted"].as<int>();
      }
      exec0(tx, stmt::advance_schedule, row.id, advance.next_fire_us, advance.prev_fire_us, started, advance.dropped);
      ++fired.schedules;
      fired.runs_started += started;
    }
    tx.commit();
  });
  return fired;
}

std::optional<std::int64_t> ScheduleStore::next_due_in_us() {
  std::optional<std::int64_t> in;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    const auto due_in = exec1(tx, stmt::next_schedule_in)["due_in_us"];
    in = due_in.is_null() ? std::nullopt : std::optional<std::int64_t>(due_in.as<std::int64_t>());
  });
  return in;
}

}  // namespace durable::pg
