// TLS (docs/operations.md): engines reach PostgreSQL over TLS with the server's certificate
// verified in full (sslmode=verify-full) against a CA the test kit makes with openssl; a setting
// the server refuses for good fails the engine's start at once, saying what to change.
#include <catch2/catch.hpp>
#include <pqxx/pqxx>

#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace durable;
using namespace durable::test;
using namespace std::chrono_literals;

namespace {

testing::TemporaryPostgres::Options with_tls() {
  testing::TemporaryPostgres::Options options;
  options.tls = true;
  options.max_connections = 40;
  return options;
}

EngineOptions over(const std::string& url) {
  EngineOptions options;
  options.database_url = url;
  options.schema = "over_tls";
  return options;
}

}  // namespace

TEST_CASE("an engine reaches PostgreSQL over TLS, the server's certificate verified, every session encrypted",
          "[tls]") {
  testing::TemporaryPostgres pg(with_tls());
  Engine engine(over(pg.tls_url()));
  register_all(engine);
  engine.start();
  CHECK(engine.start_workflow<HelloWorkflow>("over-tls", std::string("tls")).result(20s) == "hello, tls");
  CHECK(engine.start_workflow<SleepWorkflow>("timer-over-tls", 20).result(20s)["slept_ms"] >= 20);
  // Seen from the server (on its unix socket): the engine's sessions came over TCP, each with TLS.
  pqxx::connection admin(pg.url());
  pqxx::nontransaction tx(admin);
  const auto row = tx.exec1(
      "SELECT count(*) AS tcp, count(*) FILTER (WHERE s.ssl AND s.version IN ('TLSv1.2', 'TLSv1.3')) AS tls "
      "FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid "
      "WHERE a.client_addr IS NOT NULL AND a.backend_type = 'client backend'");
  CHECK(row["tcp"].as<int>() >= 2);  // the pool and the listener at least
  CHECK(row["tls"].as<int>() == row["tcp"].as<int>());
}

TEST_CASE("a TLS setting the server refuses for good fails an engine's start at once, saying what to change",
          "[tls][bad_input]") {
  testing::TemporaryPostgres pg(with_tls());
  const auto other_dir = std::filesystem::temp_directory_path() / testing::unique_schema("other_ca");
  const auto other = testing::make_test_certificates(other_dir, {"localhost"});
  struct Case {
    std::string url;
    std::string libpq_says;
    std::string change;
  };
  const std::vector<Case> cases = {
      {pg.tls_url() + " sslrootcert=" + other.ca_cert.string(), "certificate verify failed", "sslrootcert="},
      {pg.tls_url() + " host=127.0.0.1", "does not match host name", "subjectAltName"},
      {pg.tls_url() + " sslrootcert=/nonexistent/root.crt", "root certificate file", "set sslrootcert="},
      {pg.tls_url() + " sslmode=disable", "no encryption", "sslmode=verify-full"},
  };
  for (const Case& bad : cases) {
    INFO(bad.url);
    Engine engine(over(bad.url));
    register_all(engine);
    const auto began = std::chrono::steady_clock::now();
    try {
      engine.start();
      FAIL_CHECK("the engine started");
    } catch (const DatabaseRefused& e) {
      CHECK_THAT(e.what(), Catch::Contains(bad.libpq_says) && Catch::Contains(bad.change));
    }
    CHECK(std::chrono::steady_clock::now() - began < 5s);  // no retries
  }
  std::filesystem::remove_all(other_dir);
}
