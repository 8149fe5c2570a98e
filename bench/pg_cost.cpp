// PostgreSQL's cost per unit of work (see pg_cost.hpp).
#include "pg_cost.hpp"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

namespace bench {

namespace {

// CPU time (user + system, microseconds) the PostgreSQL server on this machine has used: its
// postmaster's own and that of its children, live ones read one by one, ended ones from the
// postmaster's total of waited-for children. Empty when the data directory's postmaster.pid is
// not readable here (a remote server).
std::optional<double> server_cpu_us(pqxx::connection& conn) {
  std::string data_dir;
  {
    pqxx::nontransaction tx(conn);
    data_dir = tx.exec1("SELECT setting FROM pg_settings WHERE name = 'data_directory'")[0].as<std::string>();
  }
  std::ifstream pid_file(data_dir + "/postmaster.pid");
  long postmaster = 0;
  if (!(pid_file >> postmaster)) return std::nullopt;
  // /proc/PID/stat: "pid (comm) state ppid ..."; utime, stime, cutime, cstime are fields 14-17.
  auto fields_of = [](const std::filesystem::path& stat) -> std::vector<std::string> {
    std::string text;
    try {
      std::ifstream in(stat);
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::ios_base::failure&) {  // it ended between the listing and the read (ESRCH)
      return {};
    }
    const auto close = text.rfind(')');
    if (close == std::string::npos) return {};
    std::vector<std::string> fields;  // from field 3 (state) on
    std::istringstream rest(text.substr(close + 2));
    for (std::string f; rest >> f;) fields.push_back(f);
    return fields;
  };
  double ticks = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const auto f = fields_of(entry.path() / "stat");
    if (f.size() < 15) continue;
    const long pid = std::stol(name);
    const long ppid = std::stol(f[1]);
    if (pid != postmaster && ppid != postmaster) continue;
    ticks += std::stod(f[11]) + std::stod(f[12]);                         // utime, stime
    if (pid == postmaster) ticks += std::stod(f[13]) + std::stod(f[14]);  // cutime, cstime: ended children
  }
  return ticks * 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

PgCostProbe::PgCostProbe(const std::string& url) : conn_(url) {
  before_cpu_us_ = server_cpu_us(conn_);
  before_xid_ = take_xid();
  pqxx::nontransaction tx(conn_);
  before_lsn_ = tx.exec1("SELECT pg_current_wal_insert_lsn()::text")[0].as<std::string>();
}

PgCost PgCostProbe::per(double units) {
  long long wal = 0;
  {
    pqxx::nontransaction tx(conn_);
    wal = tx.exec_params1("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint", before_lsn_)[0]
              .as<long long>();
  }
  const long long xacts = take_xid() - before_xid_ - 1;
  PgCost cost{static_cast<double>(wal) / units, static_cast<double>(xacts) / units};
  const auto cpu = server_cpu_us(conn_);
  if (cpu && before_cpu_us_) cost.server_cpu_us = (*cpu - *before_cpu_us_) / units;
  return cost;
}

long long PgCostProbe::take_xid() {
  pqxx::work tx(conn_);
  const auto xid = tx.exec1("SELECT txid_current()")[0].as<long long>();
  tx.commit();
  return xid;
}

void add_pg_cost(Result& result, const PgCost& cost, const std::string& unit) {
  result["wal_bytes_per_" + unit] = cost.wal_bytes;
  result["write_xacts_per_" + unit] = cost.write_xacts;
  result["pg_cpu_us_per_" + unit] = cost.server_cpu_us ? durable::Json(*cost.server_cpu_us) : durable::Json();
}

}  // namespace bench
