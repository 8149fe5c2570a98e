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
  const std::string s = quoted(schema);
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  // A skip is not time a running attempt or replay spent: their live leases, and the holds of
  // bodies still running, move with the clock (an attempt's timeout counts real time too), so
  // a body running across a jump is neither timed out nor taken over. Due times stay: they come due.
  tx.exec_params(fmt::format(R"(
WITH old AS (SELECT now() + skew AS now, skew FROM {0}.clock),
new AS (UPDATE {0}.clock SET skew = {1} RETURNING skew),
shift AS (SELECT old.now, new.skew - old.skew AS by FROM old, new),
t AS (UPDATE {0}.tasks k SET lease_until = k.lease_until + shift.by FROM shift
      WHERE k.status IN ('running', 'cancelled') AND k.lease_until >= shift.now),
w AS (UPDATE {0}.workflows o SET lease_until = o.lease_until + shift.by FROM shift
      WHERE o.status = 'running' AND o.lease_until >= shift.now),
l AS (UPDATE {0}.idempotency_locks h SET held_until = h.held_until + shift.by FROM shift
      WHERE h.held_until >= shift.now)
SELECT 1)",
                             s, skew_sql),
                 arg);
  for (auto kind : {Wake::workflows, Wake::tasks, Wake::schedules}) {
    tx.exec_params("SELECT pg_notify($1, '')", wake_channel(schema, kind));
  }
  tx.commit();
}

}  // namespace durable::pg
