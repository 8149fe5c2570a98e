// What a unit of work costs PostgreSQL: server CPU, WAL bytes and write transactions.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "support.hpp"

namespace bench {

struct PgCost {
  double wal_bytes = 0;                   // per unit
  double write_xacts = 0;                 // per unit
  std::optional<double> server_cpu_us{};  // per unit; empty when the server is not on this machine
};

// WAL and write transactions the server produced between construction and per(). Both
// counters are server-wide, so anything else running on the server (autovacuum included) is
// counted too: the benchmark assumes it has the server to itself.
//  - WAL bytes: the growth of pg_current_wal_insert_lsn(). Not pg_current_wal_lsn(): that is
//    where WAL has been written out to, and lags behind records of asynchronous commits (the
//    engine's claims) still in the WAL buffers.
//  - Write transactions: PostgreSQL gives a transaction an id only when it writes, locks a row
//    or NOTIFYs, so the growth of txid_current() counts them. Reading txid_current() gives the
//    probe's own transaction an id too: the reading before takes id B, the one after takes A,
//    and the A - B - 1 ids in between went to the measured work.
//  The probe's two commits stay out of the WAL figure: the first reading commits its id before
//  it reads the LSN, the last reads the LSN before it takes an id.
class PgCostProbe {
 public:
  explicit PgCostProbe(const std::string& url);

  PgCost per(double units);

 private:
  long long take_xid();

  pqxx::connection conn_;
  std::optional<double> before_cpu_us_;
  long long before_xid_ = 0;
  std::string before_lsn_;
};

void add_pg_cost(Result& result, const PgCost& cost, const std::string& unit);

}  // namespace bench
