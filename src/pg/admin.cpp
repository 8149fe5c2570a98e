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
  // built SQL: DDL of the schema name, an identifier (validate_schema_name)
  tx.exec0(fmt::format("DROP SCHEMA IF EXISTS {} CASCADE", quoted(schema)));
}

namespace {

void move_clock(const std::string& url, const std::string& schema, const char* statement, std::int64_t arg) {
  validate_schema_name(schema);
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  // Unprepared: one statement, and the URL may lead through a pooler (EngineOptions::pooler_mode).
  const auto texts = statement_text_map(schema);
  const UnpreparedScope unprepared(conn, texts.get());
  exec(tx, statement, arg);
  for (auto kind : {Wake::workflows, Wake::tasks, Wake::schedules}) {
    tx.exec_params("SELECT pg_notify($1, '')", wake_channel(schema, kind));
  }
  tx.commit();
}

}  // namespace

void advance_clock(const std::string& url, const std::string& schema, std::int64_t ms) {
  move_clock(url, schema, stmt::advance_clock, ms);
}

void set_clock(const std::string& url, const std::string& schema, std::int64_t us) {
  move_clock(url, schema, stmt::set_clock, us);
}

}  // namespace durable::pg
