// The schema: durable's tables in a PostgreSQL schema and their version. An engine migrates the
// schema as it starts unless EngineOptions::migrate_schema is off; deploy scripts can migrate
// first (`durable migrate`) and check the version (`durable migrate --check`).
#pragma once

#include <string>

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
int migrate_schema(const std::string& database_url = {}, const std::string& schema = "durable");

}  // namespace durable
