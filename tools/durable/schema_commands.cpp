// `durable migrate`: the schema's version, and the one verb that migrates it.
#include <fmt/format.h>

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

void migrate(Cli& cli) {
  const Globals& g = cli.globals;
  const int before = schema_version(g.database_url, g.schema).current;
  const int after = migrate_schema(g.database_url, g.schema);
  cli.tool.print({{"schema", g.schema}, {"version", after}, {"migrated_from", before}},
                 before == after
                     ? fmt::format("schema '{}' is at version {}: nothing to do\n", g.schema, after)
                     : fmt::format("schema '{}' migrated from version {} to {}\n", g.schema, before, after));
}

}  // namespace

void add_schema_commands(CLI::App& app, Cli& cli) {
  auto check = std::make_shared<bool>(false);
  auto* migrate_verb = app.add_subcommand("migrate", "apply the schema's migrations and print its version");
  migrate_verb->add_flag("--check", *check, "change nothing; exit 1 when the schema is behind this build");
  example(migrate_verb, "durable migrate --check --schema orders");
  cli.verb(migrate_verb, [&cli, check] {
    check_database_url(cli.globals.database_url);
    if (*check) {
      check_schema(cli);
    } else {
      migrate(cli);
    }
  });
}

}  // namespace durable::cli
