#include "support/test_db.hpp"

#include "support/test_sql.hpp"

#include <fmt/format.h>

#include "support/test_workflows.hpp"

namespace durable::test {

TestDb::TestDb() : url_(testing::database_url()), schema_(testing::unique_schema()) {}

TestDb::~TestDb() {
  try {
    testing::drop_schema(url_, schema_);
  } catch (...) {  // a test that stopped the server already lost the schema's connection
  }
}

EngineOptions TestDb::options() const {
  EngineOptions o;
  o.database_url = url_;
  o.schema = schema_;
  o.poll_interval = std::chrono::milliseconds{200};
  o.shutdown_grace = std::chrono::seconds{2};
  return o;
}

pqxx::result TestDb::query(const std::string& sql) const {
  pqxx::connection conn(url_);
  pqxx::nontransaction tx(conn);
  return tx.exec(test::test_sql(sql, "\"" + schema_ + "\""));
}

long long TestDb::count(const std::string& sql) const { return query(sql)[0][0].as<long long>(); }

long long runs_of(const TestDb& db, const std::string& workflow_id, const std::string& status) {
  return db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = '" + workflow_id + "'" +
                  (status.empty() ? "" : " AND status = '" + status + "'"));
}

long long events_of(const TestDb& db, const std::string& workflow_id, const std::string& kind) {
  return db.count("SELECT count(*) FROM {journal} jw WHERE workflow_id = '" + workflow_id + "' AND kind = '" + kind +
                  "'");
}

bool TestDb::schema_exists() const {
  pqxx::connection conn(url_);
  pqxx::nontransaction tx(conn);
  return tx.exec_params1("SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema_)[0].as<int>() == 1;
}

namespace {
EngineOptions adjusted(const TestDb& db, const std::function<void(EngineOptions&)>& adjust) {
  EngineOptions o = db.options();
  if (adjust) adjust(o);
  return o;
}
}  // namespace

RunningEngine::RunningEngine(const std::function<void(EngineOptions&)>& adjust,
                             const std::function<void(Engine&)>& register_more)
    : engine(adjusted(db, adjust)) {
  register_all(engine);
  if (register_more) register_more(engine);
  engine.start();
}

EngineMetrics settled_metrics(Engine& engine, std::uint64_t finished_runs) {
  EngineMetrics m;
  wait_until([&] {
    m = engine.metrics();
    return m.activity_in_flight == 0 && m.workflows_completed + m.workflows_failed >= finished_runs;
  });
  return m;
}

}  // namespace durable::test
