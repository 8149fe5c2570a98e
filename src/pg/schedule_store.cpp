#include "pg/schedule_store.hpp"

#include "log.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

namespace {

// The spec columns, in the order the statements take them ($2..$8).
ScheduleSpec spec_from(const pqxx::row& r, int first) {
  ScheduleSpec spec;
  spec.workflow = r[first].as<std::string>();
  spec.input = Json::parse(r[first + 1].as<std::string>());
  spec.cron = r[first + 2].as<std::string>();
  spec.time_zone = r[first + 3].as<std::string>();
  spec.misfire = parse_misfire_policy(r[first + 4].as<std::string>());
  spec.catchup_limit = r[first + 5].as<int>();
  spec.misfire_grace = Duration{r[first + 6].as<std::int64_t>()};
  return spec;
}

}  // namespace

ScheduleStore::ScheduleStore(ConnectionPool& pool)
    : pool_(pool),
      schedules_channel_(wake_channel(pool.schema(), Wake::schedules)),
      workflows_channel_(wake_channel(pool.schema(), Wake::workflows)) {}

std::int64_t ScheduleStore::db_now_us() {
  std::int64_t now = 0;
  pool_.run([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    now = tx.exec_prepared1(stmt::db_now_us)[0].as<std::int64_t>();
  });
  return now;
}

int ScheduleStore::write(const char* statement, const ScheduleRow& row, const std::string& revision,
                         std::string* revision_before) {
  int written = 0;
  const ScheduleSpec& s = row.spec;
  pool_.run([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    auto r = tx.exec_prepared1(statement, row.id, s.workflow, s.input.dump(), s.cron, s.time_zone, to_string(s.misfire),
                               s.catchup_limit, s.misfire_grace.count(), row.next_fire_us, row.prev_fire_us, revision,
                               schedules_channel_);
    written = r[0].as<int>();
    if (revision_before && r.size() > 2 && !r[2].is_null()) *revision_before = r[2].as<std::string>();
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

bool ScheduleStore::set_paused(const std::string& id, bool paused) {
  bool found = false;
  pool_.run([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    found = tx.exec_prepared1(stmt::pause_schedule, id, paused, schedules_channel_)[0].as<int>() == 1;
  });
  return found;
}

bool ScheduleStore::remove(const std::string& id) {
  bool found = false;
  pool_.run([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    found = !tx.exec_prepared(stmt::delete_schedule, id).empty();
  });
  return found;
}

std::vector<ScheduleRow> ScheduleStore::read(const std::optional<std::string>& id) {
  std::vector<ScheduleRow> rows;
  pool_.run([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    rows.clear();
    const char* filter = id ? id->c_str() : nullptr;  // NULL reads them all
    for (const auto& r : tx.exec_prepared(stmt::read_schedules, filter)) {
      ScheduleRow row;
      row.id = r[0].as<std::string>();
      row.spec = spec_from(r, 1);
      row.paused = r[8].as<bool>();
      row.next_fire_us = r[9].as<std::int64_t>();
      row.fires_started = r[10].as<std::int64_t>();
      row.fires_dropped = r[11].as<std::int64_t>();
      rows.push_back(std::move(row));
    }
  });
  return rows;
}

ScheduleStore::Fired ScheduleStore::fire_due(
    int limit, const std::function<ScheduleAdvance(const ScheduleRow& row, std::int64_t now_us)>& plan) {
  Fired fired;
  // Safe to repeat after a lost commit: the schedule moved on (nothing is due) or, if not, the
  // runs' ids are taken and nothing starts twice.
  pool_.run([&](pqxx::connection& conn) {
    fired = {};
    pqxx::work tx(conn);
    for (const auto& r : tx.exec_prepared(stmt::due_schedules, limit)) {
      ScheduleRow row;
      row.id = r[0].as<std::string>();
      row.spec = spec_from(r, 1);
      row.next_fire_us = r[8].as<std::int64_t>();
      row.prev_fire_us = r[9].as<std::int64_t>();
      const auto now_us = r[10].as<std::int64_t>();
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
        started += tx.exec_prepared1(stmt::start_workflow, start.workflow_id, start.run_id, row.spec.workflow,
                                     row.spec.input.dump(), workflows_channel_, start.context.dump(), "", 0, 0)[0]
                       .as<int>();
      }
      tx.exec_prepared0(stmt::advance_schedule, row.id, advance.next_fire_us, advance.prev_fire_us, started,
                        advance.dropped);
      ++fired.schedules;
      fired.runs_started += started;
    }
    tx.commit();
  });
  return fired;
}

std::optional<std::int64_t> ScheduleStore::next_due_in_us() {
  std::optional<std::int64_t> in;
  pool_.run([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    auto r = tx.exec_prepared1(stmt::next_schedule_in);
    in = r[0].is_null() ? std::nullopt : std::optional<std::int64_t>(r[0].as<std::int64_t>());
  });
  return in;
}

}  // namespace durable::pg
