#include "durable/testing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <pqxx/pqxx>

#include "pg/connection_pool.hpp"
#include "pg/migrations.hpp"
#include "pg/statements.hpp"
#include "uuid.hpp"

namespace durable::testing {

std::string unique_schema(const std::string& prefix) {
  std::string id = detail::random_uuid();
  id.erase(std::remove(id.begin(), id.end(), '-'), id.end());
  std::string name = prefix + "_" + id.substr(0, 16);
  pg::validate_schema_name(name);
  return name;
}

void drop_schema(const std::string& url, const std::string& schema) {
  pg::validate_schema_name(schema);
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  tx.exec0(fmt::format("DROP SCHEMA IF EXISTS {} CASCADE", pg::quoted(schema)));
}

namespace {
// Sets the schema's clock skew to `skew_sql` (over $1) and wakes every engine on it.
void move_clock(const std::string& url, const std::string& schema, const std::string& skew_sql, std::int64_t arg) {
  pg::validate_schema_name(schema);
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  tx.exec_params0(fmt::format("UPDATE {}.clock SET skew = {}", pg::quoted(schema), skew_sql), arg);
  for (auto kind : {pg::Wake::workflows, pg::Wake::tasks, pg::Wake::schedules}) {
    tx.exec_params("SELECT pg_notify($1, '')", pg::wake_channel(schema, kind));  // due times moved
  }
  tx.commit();
}
}  // namespace

void advance_clock(const std::string& url, const std::string& schema, Duration by) {
  move_clock(url, schema, "skew + $1::bigint * interval '1 millisecond'", by.count());
}

void set_clock(const std::string& url, const std::string& schema, std::chrono::system_clock::time_point to) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(to.time_since_epoch()).count();
  move_clock(url, schema, "timestamptz 'epoch' + $1::bigint * interval '1 microsecond' - now()", us);
}

}  // namespace durable::testing
