#include "pg/queue_store.hpp"

#include <algorithm>

#include "base/uuid.hpp"
#include "pg/audit.hpp"
#include "pg/connection_pool.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

namespace {
std::optional<std::int64_t> optional_us(const pqxx::field& field) {
  if (field.is_null()) return std::nullopt;
  return field.as<std::int64_t>();
}

// A stored limit: 0 is none.
std::optional<int> limit_of(const pqxx::field& field) {
  const int value = field.as<int>();
  return value > 0 ? std::optional<int>(value) : std::nullopt;
}

std::optional<RateLimit> rate_of(const pqxx::field& count, const pqxx::field& period_ms) {
  const int n = count.as<int>();
  return n > 0 ? std::optional<RateLimit>(RateLimit{n, Duration{period_ms.as<std::int64_t>()}}) : std::nullopt;
}
}  // namespace

QueueStore::QueueStore(ConnectionPool& pool, detail::Sealer sealer)
    : pool_(pool),
      seal_(std::move(sealer)),
      workflows_channel_(wake_channel(pool.schema(), Wake::workflows)),
      ended_channel_(wake_channel(pool.schema(), Wake::ended)),
      tasks_channel_(wake_channel(pool.schema(), Wake::tasks)),
      paused_channel_(wake_channel(pool.schema(), Wake::paused)) {}

bool QueueStore::define(const QueueSpec& spec) {
  bool changed = false;
  const RateLimit none{};
  const RateLimit& rate = spec.rate ? *spec.rate : none;
  const RateLimit& key_rate = spec.key_rate ? *spec.key_rate : none;
  pool_.write(stmt::define_queue, [&](pqxx::connection& conn, bool) {  // a repeat sets the same
    pqxx::work tx(conn);
    exec(tx, stmt::lock_queue, spec.name);
    changed = exec1(tx, stmt::define_queue, spec.name, spec.concurrency.value_or(0), spec.key_concurrency.value_or(0),
                    rate.count, rate.period.count(), key_rate.count, key_rate.period.count(), workflows_channel_,
                    Json(spec.key_weights).dump(), spec.priority_aging.value_or(Duration{0}).count())["changed"]
                  .as<int>() == 1;
    tx.commit();
  });
  return changed;
}

bool QueueStore::set_paused(const std::string& name, bool paused, const OperatorAction& action) {
  bool found = false;
  const std::string action_id = detail::random_uuid();
  pool_.write(stmt::pause_queue, [&](pqxx::connection& conn, bool maybe_committed) {  // a repeat sets the same
    pqxx::work tx(conn);
    if (maybe_committed && audited(tx, action_id)) {
      found = true;  // the earlier try committed, its entry with it
      return;
    }
    found = exec1(tx, stmt::pause_queue, name, paused, action.actor, seal_.seal_text(action.reason), workflows_channel_,
                  tasks_channel_)["found"]
                .as<int>() == 1;
    if (found)
      insert_audit(tx, seal_, action, action_id, paused ? "queue_pause" : "queue_resume", "", "", {{"queue", name}});
    tx.commit();
  });
  return found;
}

bool QueueStore::set_type_paused(const std::string& kind, const std::string& name, bool paused,
                                 const OperatorAction& action) {
  bool changed = false;
  const std::string action_id = detail::random_uuid();
  pool_.write(stmt::pause_type, [&](pqxx::connection& conn, bool maybe_committed) {  // a repeat sets the same
    pqxx::work tx(conn);
    if (maybe_committed && audited(tx, action_id)) {
      changed = true;  // the earlier try committed, its entry with it
      return;
    }
    changed = exec1(tx, stmt::pause_type, kind, name, paused, action.actor, seal_.seal_text(action.reason),
                    workflows_channel_, tasks_channel_, paused_channel_)["changed"]
                  .as<int>() > 0;
    if (changed) {
      const std::string audited_action = kind + (paused ? "_type_pause" : "_type_resume");
      insert_audit(tx, seal_, action, action_id, audited_action.c_str(), "", "", {{kind, name}});
    }
    tx.commit();
  });
  return changed;
}

std::vector<PausedTypeRow> QueueStore::paused_types() {
  std::vector<PausedTypeRow> rows;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    rows.clear();
    for (const auto& r : exec(tx, stmt::paused_types)) {
      rows.push_back({r["kind"].as<std::string>(), r["name"].as<std::string>(), r["paused_at_us"].as<std::int64_t>(),
                      r["paused_by"].as<std::string>(),
                      seal_.open_text(r["paused_reason"].as<std::string>(), "a paused type's reason")});
    }
  });
  return rows;
}

PausedNames QueueStore::paused_names() {
  PausedNames names;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    names = {};
    for (const auto& r : exec(tx, stmt::paused_names)) {
      (r["kind"].as<std::string>() == "workflow" ? names.workflows : names.activities)
          .push_back(r["name"].as<std::string>());
    }
  });
  return names;
}

std::vector<QueueRow> QueueStore::read(const std::string& name) {
  std::vector<QueueRow> rows;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    rows.clear();
    for (const auto& r : exec(tx, stmt::read_queues, name)) {
      QueueRow row;
      row.spec.name = r["name"].as<std::string>();
      row.spec.concurrency = limit_of(r["concurrency"]);
      row.spec.key_concurrency = limit_of(r["key_concurrency"]);
      row.spec.rate = rate_of(r["rate_count"], r["rate_period_ms"]);
      row.spec.key_rate = rate_of(r["key_rate_count"], r["key_rate_period_ms"]);
      row.spec.key_weights = Json::parse(r["key_weights"].c_str()).get<std::map<std::string, int>>();
      if (const auto aging_ms = r["priority_aging_ms"].as<std::int64_t>(); aging_ms > 0)
        row.spec.priority_aging = Duration{aging_ms};
      row.paused = r["paused"].as<bool>();
      row.paused_at_us = optional_us(r["paused_at_us"]);
      row.paused_by = r["paused_by"].as<std::string>();
      row.paused_reason = seal_.open_text(r["paused_reason"].as<std::string>(), "a queue's pause reason");
      row.queued = r["queued"].as<std::int64_t>();
      row.running = r["running"].as<std::int64_t>();
      row.key_throttled = r["key_throttled"].as<std::int64_t>();
      row.oldest_queued_us = optional_us(r["oldest_queued_us"]);
      row.activities_waiting = r["activities_waiting"].as<std::int64_t>();
      row.activities_running = r["activities_running"].as<std::int64_t>();
      row.now_us = r["now_us"].as<std::int64_t>();
      rows.push_back(std::move(row));
    }
  });
  return rows;
}

std::vector<QueueKeyRow> QueueStore::keys(const std::string& name, int limit) {
  std::vector<QueueKeyRow> rows;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    rows.clear();
    for (const auto& r : exec(tx, stmt::queue_keys, name, limit)) {
      rows.push_back({r["key"].as<std::string>(), r["queued"].as<std::int64_t>(), r["running"].as<std::int64_t>(),
                      optional_us(r["oldest_queued_us"]), r["now_us"].as<std::int64_t>()});
    }
  });
  return rows;
}

std::vector<std::string> QueueStore::names_of_defined(const std::vector<std::string>& names) {
  std::vector<std::string> defined;
  pool_.read([&](pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    defined.clear();
    for (const auto& r : exec(tx, stmt::defined_queues, Json(names).dump())) {
      defined.push_back(r["name"].as<std::string>());
    }
  });
  return defined;
}

QueueStore::Admission QueueStore::admit(const std::string& name, const std::string& names_json, int limit, bool sweep) {
  Admission admission;
  // Safe to repeat after a lost answer: what the earlier try admitted counts as admitted now.
  pool_.write(stmt::admit_queued, [&](pqxx::connection& conn, bool) {
    pqxx::work tx(conn);
    admission = {};
    // A queue not defined yet has no row to lock: nothing is admitted on it (its runs wait).
    if (exec(tx, stmt::lock_queue, name).empty()) return;
    exec(tx, stmt::age_lines, name);  // a statement of its own: the admission walks what it leaves
    auto row = exec1(tx, stmt::admit_queued, name, limit, workflows_channel_, ended_channel_, names_json);
    admission = {row["admitted"].as<int>(), row["cancelled"].as<int>(), std::nullopt, row["short"].as<bool>()};
    if (!row["retry_in_ms"].is_null())
      admission.retry_in = Duration{std::max<std::int64_t>(1, row["retry_in_ms"].as<std::int64_t>())};
    // Lines to look at: those this admission took from, or all of them.
    const bool all_lines = sweep && admission.short_of_lines;
    if (all_lines || !row["emptied"].is_null()) {
      const std::string lines = all_lines ? "" : row["emptied"].as<std::string>();
      Json locked = Json::array();
      for (const auto& r : exec(tx, stmt::lock_empty_lines, name, lines)) {
        locked.push_back({{"key", r["key"].as<std::string>()}, {"priority", r["priority"].as<int>()}});
      }
      if (!locked.empty()) exec(tx, stmt::retire_lines, name, locked.dump());
    }
    tx.commit();
  });
  return admission;
}

}  // namespace durable::pg
