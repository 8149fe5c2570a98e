// Numbered schema migrations, each applied under a lock of the schema so that many processes may
// start at once.
#pragma once

#include <pqxx/pqxx>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/embedded.hpp"

#include "pg/database.hpp"  // validate_schema_name

namespace durable::pg {

// Creates the schema and applies every migration it lacks, up to `up_to` (-1: all; upgrade tests
// build older versions); returns the version reached.
int migrate(pqxx::connection& conn, const std::string& schema, int up_to = -1);

// The schema's version, 0 when it has no durable tables; writes nothing.
int schema_version_of(pqxx::connection& conn, const std::string& schema);

// Checks, writing nothing, that the schema is at the version this build knows; throws
// DatabaseError naming what to do when it is missing, behind or ahead.
void check_schema_version(pqxx::connection& conn, const std::string& schema);

// The newest migration this build knows: the number of files in src/pg/migrations/.
int latest_schema_version();

// Migration `version` (1 to latest) as it is run on `schema`.
std::string migration_sql(int version, const std::string& schema);

// The migrations among `files` (sorted by name, as embedded), version N the Nth: std::logic_error
// unless they are named NNN_name and numbered 001, 002, ... with no gap and no number twice.
std::vector<std::string_view> ordered_migrations(std::span<const detail::EmbeddedFile> files);

}  // namespace durable::pg
