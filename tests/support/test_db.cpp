#include "support/test_db.hpp"

#include "support/test_sql.hpp"

#include <fmt/format.h>

#include <libpq-fe.h>

#include <cstdlib>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <string_view>

#include "support/test_workflows.hpp"

namespace durable::test {

namespace {

// The roles the tests run under with DURABLE_TEST_ROLES=engine, made once per cluster: an owner
// that may create schemas, and an engine role that is granted each test's schema.
constexpr const char* test_owner = "durable_test_owner";
constexpr const char* test_engine = "durable_test_engine";
constexpr const char* test_reader = "durable_test_reader";

void make_test_roles(const std::string& url) {
  static std::once_flag made;
  std::call_once(made, [&] {
    pqxx::connection conn(url);
    pqxx::work tx(conn);
    // Test processes run side by side: one at a time here (two grants on the database at once
    // fail with "tuple concurrently updated"), and a role another made already is no error.
    tx.exec("SELECT pg_advisory_xact_lock(hashtext('durable tests: roles'))");
    for (const char* role : {test_owner, test_engine, test_reader}) {
      tx.exec0(fmt::format(
          "DO $$ BEGIN CREATE ROLE {} LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$",
          role));
    }
    tx.exec0(fmt::format("GRANT CREATE ON DATABASE {} TO {}", tx.quote_name(conn.dbname()), test_owner));
    tx.commit();
  });
}

}  // namespace

void test_roles_without_jit() {
  static std::once_flag done;
  std::call_once(done, [] {
    const std::string& url = testing::database_url();
    make_test_roles(url);
    pqxx::connection conn(url);
    pqxx::work tx(conn);
    tx.exec("SELECT pg_advisory_xact_lock(hashtext('durable tests: roles'))");
    for (const std::string& role : std::vector<std::string>{conn.username(), test_owner, test_engine, test_reader}) {
      tx.exec0(fmt::format("ALTER ROLE {} SET jit = off", tx.quote_name(role)));
    }
    tx.commit();
  });
}

std::string as_role(const std::string& url, const std::string& role) {
  if (url.rfind("postgres://", 0) == 0 || url.rfind("postgresql://", 0) == 0) {
    return url + (url.find('?') == std::string::npos ? "?" : "&") + "user=" + role;
  }
  return url + " user=" + role;  // the last of a key given twice wins
}

bool under_engine_role() {
  const char* roles = std::getenv("DURABLE_TEST_ROLES");
  return roles != nullptr && std::string(roles) == "engine";
}

namespace {

std::string user_of(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  PQfreemem(error);
  std::string user;
  for (const PQconninfoOption* o = options; o != nullptr && o->keyword != nullptr; ++o) {
    if (std::string_view(o->keyword) == "user" && o->val != nullptr) user = o->val;
  }
  PQconninfoFree(options);
  return user;
}

}  // namespace

const std::string& test_pooler_url() {
  static const std::string url = [] {
    if (const char* inherited = std::getenv("DURABLE_TEST_POOLER_URL"); inherited != nullptr && *inherited != '\0') {
      return std::string(inherited);
    }
    const char* wanted = std::getenv("DURABLE_TEST_POOLER");
    if (wanted == nullptr || std::string_view(wanted) != "1") return std::string();
    test_roles_without_jit();
    static testing::TemporaryPgBouncer pooler(testing::database_url(),
                                              {.users = {test_owner, test_engine, test_reader}});
    ::setenv("DURABLE_TEST_POOLER_URL", pooler.url().c_str(), 1);
    return pooler.url();
  }();
  return url;
}

void through_test_pooler(EngineOptions& o) {
  const std::string& pooler = test_pooler_url();
  if (pooler.empty()) return;
  o.listen_url = o.database_url.empty() ? testing::database_url() : o.database_url;
  const std::string user = user_of(o.listen_url);
  o.database_url = user.empty() ? pooler : as_role(pooler, user);
  o.pooler_mode = true;
}

TestDb::TestDb() : url_(testing::database_url()), schema_(testing::unique_schema()), engine_url_(url_) {
  if (!under_engine_role()) return;
  make_test_roles(url_);
  const std::string owner_url = as_role(url_, test_owner);
  migrate_schema(owner_url, schema_);
  grant_schema_roles(owner_url, schema_, {{test_engine}, {test_reader}});
  engine_url_ = as_role(url_, test_engine);
}

TestDb::~TestDb() {
  try {
    testing::drop_schema(url_, schema_);
  } catch (...) {  // a test that stopped the server already lost the schema's connection
  }
}

EngineOptions TestDb::options() const {
  EngineOptions o;
  o.database_url = engine_url_;
  o.schema = schema_;
  o.poll_interval = std::chrono::milliseconds{200};
  o.shutdown_grace = std::chrono::seconds{2};
  o.migrate_schema = !under_engine_role();  // migrated by its owner: the engine role may not
  through_test_pooler(o);
  return o;
}

pqxx::result TestDb::query(const std::string& sql) const {
  pqxx::connection conn(url_);
  pqxx::nontransaction tx(conn);
  return tx.exec(test::test_sql(sql, "\"" + schema_ + "\""));
}

long long TestDb::count(const std::string& sql) const { return query(sql)[0][0].as<long long>(); }

std::string multi_host_url(const std::vector<std::string>& urls) {
  static const std::regex host(R"(host=(\S+))"), port(R"(port=(\d+))");
  std::string hosts, ports;
  for (const std::string& url : urls) {
    std::smatch h, p;
    if (!std::regex_search(url, h, host) || !std::regex_search(url, p, port)) {
      throw std::invalid_argument("multi_host_url: no host= and port= in " + url);
    }
    hosts += (hosts.empty() ? "" : ",") + h[1].str();
    ports += (ports.empty() ? "" : ",") + p[1].str();
  }
  return "host=" + hosts + " port=" + ports + " dbname=postgres user=durable target_session_attrs=read-write";
}

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
