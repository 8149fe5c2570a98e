// Per-test database access: a fresh schema on the test cluster, dropped at the end.
#pragma once

#include <durable/durable.hpp>
#include <durable/testing.hpp>
#include <pqxx/pqxx>
#include <string>

namespace durable::test {

class TestDb {
 public:
  TestDb();
  ~TestDb();
  TestDb(const TestDb&) = delete;
  TestDb& operator=(const TestDb&) = delete;

  const std::string& url() const { return url_; }
  const std::string& schema() const { return schema_; }

  // Options for an engine on this test's schema, polling fast so tests stay quick.
  EngineOptions options() const;

  // One value from a query against this schema; `{s}` in the SQL is the quoted schema name.
  long long count(const std::string& sql) const;
  pqxx::result query(const std::string& sql) const;
  bool schema_exists() const;

 private:
  std::string url_;
  std::string schema_;
};

}  // namespace durable::test
