#include "pg/admin.hpp"

#include <fmt/format.h>

#include <pqxx/pqxx>

#include "pg/connection_pool.hpp"
#include "pg/migrations.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

void drop_schema(const std::string& url, const std::string& schema) {
  validate_schema_name(schema);
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  tx.exec0(fmt::format("DROP SCHEMA IF EXISTS {} CASCADE", quoted(schema)));
}

void set_clock_skew(const std::string& url, const std::string& schema, const std::string& skew_sql, std::int64_t arg) {
  validate_schema_name(schema);
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  tx.exec_params0(fmt::format("UPDATE {}.clock SET skew = {}", quoted(schema), skew_sql), arg);
  for (auto kind : {Wake::workflows, Wake::tasks, Wake::schedules}) {
    tx.exec_params("SELECT pg_notify($1, '')", wake_channel(schema, kind));
  }
  tx.commit();
}

}  // namespace durable::pg
