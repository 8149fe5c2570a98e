// `durable migrate`: the schema's version, and the one verb that migrates it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"

namespace durable::cli {
namespace {

// --check: the version, and exit 1 (behind) or 3 (newer than this build) when it is not this build's.
void check_schema(Cli& cli) {
  const Globals& g = cli.globals;
  const SchemaVersion v = schema_version(g.database_url, g.schema);
  cli.tool.print(
      {{"schema", g.schema}, {"version", v.current}, {"latest", v.latest}, {"up_to_date", v.up_to_date()}},
      fmt::format("schema '{}' is at version {}; this build reads version {}\n", g.schema, v.current, v.latest));
  if (v.current < v.latest) throw NotFound(fmt::format("schema '{}' is behind: run `durable migrate`", g.schema));
  if (v.current > v.latest) {
    throw DatabaseError(fmt::format("schema '{}' is newer than this build: upgrade durable", g.schema));
  }
}

// Migrates, then grants the roles given (--engine-role, --reader-role) what they need on the
// schema as it now is: a new version's tables need the grants too, so a deploy runs both each time.
void migrate(Cli& cli, const SchemaRoles& roles) {
  const Globals& g = cli.globals;
  const int before = schema_version(g.database_url, g.schema).current;
  const int after = migrate_schema(g.database_url, g.schema);
  std::string text = before == after
                         ? fmt::format("schema '{}' is at version {}: nothing to do\n", g.schema, after)
                         : fmt::format("schema '{}' migrated from version {} to {}\n", g.schema, before, after);
  const bool granting = !roles.engines.empty() || !roles.readers.empty();
  if (granting) {
    grant_schema_roles(g.database_url, g.schema, roles);
    text += fmt::format("granted: engine roles [{}], reader roles [{}]\n", fmt::join(roles.engines, ", "),
                        fmt::join(roles.readers, ", "));
  }
  cli.tool.print({{"schema", g.schema},
                  {"version", after},
                  {"migrated_from", before},
                  {"engine_roles", roles.engines},
                  {"reader_roles", roles.readers}},
                 text);
}

}  // namespace

void add_schema_commands(CLI::App& app, Cli& cli) {
  auto check = std::make_shared<bool>(false);
  auto roles = std::make_shared<SchemaRoles>();
  auto* migrate_verb = app.add_subcommand("migrate", "apply the schema's migrations and print its version");
  migrate_verb->add_flag("--check", *check, "change nothing; exit 1 when the schema is behind this build");
  migrate_verb->add_option("--engine-role", roles->engines,
                           "then grant this role an engine's rights: read and write the schema's rows, no DDL "
                           "(repeat for more)");
  migrate_verb->add_option("--reader-role", roles->readers,
                           "then grant this role a reader's rights: read the schema's rows (repeat for more)");
  example(migrate_verb,
          "durable migrate --check --schema orders\n  durable migrate --engine-role orders_engine --reader-role "
          "orders_oncall");
  cli.verb(migrate_verb, [&cli, check, roles] {
    check_database_url(cli.globals.database_url);
    if (*check) {
      if (!roles->engines.empty() || !roles->readers.empty()) {
        throw InvalidArgument("migrate --check changes nothing: give --engine-role and --reader-role without it");
      }
      check_schema(cli);
    } else {
      migrate(cli, *roles);
    }
  });
}

}  // namespace durable::cli
