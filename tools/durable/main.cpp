// `durable`: the operator's command-line tool. Every verb goes through durable's public API (the
// management API of durable/runs.hpp, schedules, stats, the schema functions), so what it does a
// program can do too. Exit codes: 0 ok, 1 not found, 2 usage or input refused, 3 database
// unreachable or refusing, 4 anything else.
//
// This file: the global options, the verbs in the order --help lists them (each group in a
// *_commands.cpp of its own, commands.hpp), and what a command line that does not parse gets.
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

#include "commands.hpp"

namespace durable::cli {
namespace {

std::string default_actor() {
  const char* user = std::getenv("USER");
  if (!user || !*user) user = std::getenv("LOGNAME");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return fmt::format("{}@{}", user && *user ? user : "unknown", host);
}

void add_global_options(CLI::App& app, Globals& g) {
  app.require_subcommand(1);
  app.fallthrough();  // the options above work after the verb too
  app.footer("Exit codes: 0 ok, 1 not found, 2 usage or input refused, 3 database unreachable or refusing, 4 other.");
  app.add_option("--database-url", g.database_url, "libpq URI or conninfo (default: $DURABLE_DATABASE_URL)");
  app.add_option("--schema", g.schema, "the schema durable's tables are in")->capture_default_str();
  app.add_flag("--pooler-mode", g.pooler_mode,
               "the database URL leads through a pooler in transaction mode (PgBouncer): keep no session state "
               "(docs/operations.md, Behind PgBouncer)")
      ->envname("DURABLE_POOLER_MODE");
  app.add_option("--actor", g.actor, "who acts, for the audit trail (default: $USER@host)");
  app.add_flag("--json", g.json, "print one JSON document instead of text");
  app.add_option("--codec-plugin", g.codec_plugin,
                 "a payload codec plugin (a shared library, docs/codec.md) to decode what engines with a codec "
                 "stored; without it such values show as [encoded with key K]")
      ->envname("DURABLE_CODEC_PLUGIN");
  app.add_option("--codec-config", g.codec_config, "what the codec plugin reads its keys from (its docs say what)")
      ->envname("DURABLE_CODEC_CONFIG");
}

int usage_error(const CLI::ParseError& e) {
  std::cerr << "durable: " << one_line(e.what()) << " (see --help)\n";
  return usage;
}

// A required option or verb missing. A verb that is not one: CLI11 says only that one is required.
int required_missing(CLI::App& app, const CLI::RequiredError& e) {
  CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  const auto rest = app.remaining(true);
  if (!at->get_subcommands({}).empty()) {
    std::string verbs;
    for (const auto* sub : at->get_subcommands({})) verbs += (verbs.empty() ? "" : ", ") + sub->get_name();
    const std::string where = at == &app ? std::string("durable") : "durable " + at->get_name();
    if (!rest.empty() && rest.front().rfind('-', 0) != 0) {
      std::cerr << fmt::format("durable: unknown verb '{}' for '{}': use one of {} (see --help)\n", rest.front(), where,
                               verbs);
    } else {
      std::cerr << fmt::format("durable: '{}' needs a verb: one of {} (see --help)\n", where, verbs);
    }
    return usage;
  }
  return usage_error(e);
}

int run(int argc, char** argv) {
  Cli cli;
  cli.globals.actor = default_actor();
  CLI::App app{"durable: find and fix workflow runs, schedules and the schema of a durable database"};
  add_global_options(app, cli.globals);
  add_schema_commands(app, cli);
  add_workflow_commands(app, cli);
  add_schedule_commands(app, cli);
  add_queue_commands(app, cli);
  add_stats_command(app, cli);
  add_retention_commands(app, cli);
  add_audit_command(app, cli);
  add_console_command(app, cli);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    return required_missing(app, e);
  } catch (const CLI::ParseError& e) {
    return usage_error(e);
  }
  return cli.exit_code;
}

}  // namespace
}  // namespace durable::cli

int main(int argc, char** argv) { return durable::cli::run(argc, argv); }
