// Numbered schema migrations, applied under an advisory lock so many processes may start at once.
#pragma once

#include <pqxx/pqxx>
#include <string>

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

// The newest migration this build knows.
int latest_schema_version();

}  // namespace durable::pg
