// Numbered schema migrations, applied under an advisory lock so many processes may start at once.
#pragma once

#include <pqxx/pqxx>
#include <string>

namespace durable::pg {

// Throws InvalidSchemaName unless `schema` matches [a-z_][a-z0-9_]{0,47}.
void validate_schema_name(const std::string& schema);

// Creates the schema and applies every migration it lacks; returns the version reached.
int migrate(pqxx::connection& conn, const std::string& schema);

// The newest migration this build knows.
int latest_schema_version();

}  // namespace durable::pg
