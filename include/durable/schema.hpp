// The schema: durable's tables in a PostgreSQL schema and their version. An engine migrates the
// schema as it starts unless EngineOptions::migrate_schema is off; deploy scripts can migrate
// first (`durable migrate`) and check the version (`durable migrate --check`).
#pragma once

#include <string>
#include <vector>

namespace durable {

struct SchemaVersion {
  int current = 0;  // the schema's version; 0 when it has no durable tables
  int latest = 0;   // the version this build of durable reads and writes
  bool up_to_date() const { return current == latest; }
};

// The newest schema version this build knows.
int latest_schema_version();

// Reads the schema's version, writing nothing. `database_url` empty: $DURABLE_DATABASE_URL.
// Throws InvalidSchemaName, InvalidArgument (no URL), DatabaseUnavailable (the server cannot be
// reached) or DatabaseRefused (it refused the session or the read).
SchemaVersion schema_version(const std::string& database_url = {}, const std::string& schema = "durable");

// Creates the schema if need be and applies the migrations it lacks, under an advisory lock (many
// processes may migrate at once); returns the version reached. Throws what schema_version throws,
// and DatabaseError when the schema is newer than this build.
// An engine on a schema at this build's version migrates nothing and runs no DDL, so a role that
// may only use the schema (SchemaRoles) starts it with migrate_schema on or off.
int migrate_schema(const std::string& database_url = {}, const std::string& schema = "durable");

// The roles that use a schema its owner migrates (docs/operations.md, Roles and privileges).
struct SchemaRoles {
  std::vector<std::string> engines;  // read and write its rows (engines, and tools that act), no DDL
  std::vector<std::string> readers;  // read its rows only (dashboards, a read-only console)
};

// Grants `roles` what they need on `schema` and nothing more, as the schema's owner (the session
// of `database_url`). Grant again after each migration: a new version's tables need the same
// grants (`durable migrate --engine-role R --reader-role R` migrates, then grants). Throws
// InvalidArgument for a role that does not exist (nothing granted then), DatabaseRefused when the
// session may not grant them (not the owner), and what schema_version throws.
void grant_schema_roles(const std::string& database_url, const std::string& schema, const SchemaRoles& roles);

}  // namespace durable
