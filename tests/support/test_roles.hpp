// Three roles of a test's schema, as docs/operations.md (Roles and privileges) describes them: an
// owner that migrates it and grants, an engine role granted its rows, a reader role granted reads.
// Named after the schema; dropped, with the schema, at the end.
#pragma once

#include <durable/durable.hpp>
#include <string>

#include "support/test_db.hpp"

namespace durable::test {

struct TestRoles {
  explicit TestRoles(const TestDb& test_db);
  ~TestRoles();
  TestRoles(const TestRoles&) = delete;
  TestRoles& operator=(const TestRoles&) = delete;

  std::string url_of(const std::string& role) const { return as_role(db.url(), role); }
  EngineOptions options_of(const std::string& role) const;
  // Migrated by the owner (up to `version`, -1: this build's), with the engine and reader roles
  // granted what `durable migrate --engine-role --reader-role` grants.
  void migrate_and_grant(int version = -1) const;

  const TestDb& db;
  const std::string owner, engine, reader;
};

// Runs `sql` as `url`'s role ({s}: the quoted name of `schema`); returns the SQLSTATE it failed
// with ("" if none).
std::string sqlstate_of(const std::string& url, const std::string& schema, const std::string& sql);

}  // namespace durable::test
