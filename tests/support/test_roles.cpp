#include "support/test_roles.hpp"

#include <fmt/format.h>

#include <pqxx/pqxx>

#include "pg/migrations.hpp"

namespace durable::test {

TestRoles::TestRoles(const TestDb& test_db)
    : db(test_db),
      owner(test_db.schema() + "_owner"),
      engine(test_db.schema() + "_engine"),
      reader(test_db.schema() + "_reader") {
  for (const std::string& role : {owner, engine, reader}) db.query("CREATE ROLE " + role + " LOGIN");
  const std::string database = db.query("SELECT current_database()")[0][0].as<std::string>();
  db.query(fmt::format("GRANT CREATE ON DATABASE \"{}\" TO {}", database, owner));  // to create its schema
}

TestRoles::~TestRoles() {
  try {
    testing::drop_schema(db.url(), db.schema());
    db.query(fmt::format("DROP OWNED BY {0}, {1}, {2}; DROP ROLE {0}, {1}, {2}", owner, engine, reader));
  } catch (...) {  // a failed test may have left less behind
  }
}

EngineOptions TestRoles::options_of(const std::string& role) const {
  EngineOptions options = db.options();
  options.database_url = url_of(role);
  return options;
}

void TestRoles::migrate_and_grant(int version) const {
  if (version < 0) {
    migrate_schema(url_of(owner), db.schema());
  } else {
    pqxx::connection conn(url_of(owner));
    pg::migrate(conn, db.schema(), version);
  }
  grant_schema_roles(url_of(owner), db.schema(), {{engine}, {reader}});
}

std::string sqlstate_of(const std::string& url, const std::string& schema, const std::string& sql) {
  try {
    pqxx::connection conn(url);
    pqxx::nontransaction tx(conn);
    tx.exec0(fmt::format(fmt::runtime(sql), fmt::arg("s", "\"" + schema + "\"")));
    return "";
  } catch (const pqxx::insufficient_privilege&) {
    return "42501";  // libpqxx 6.4 throws it without its SQLSTATE
  } catch (const pqxx::sql_error& e) {
    return e.sqlstate();
  }
}

}  // namespace durable::test
