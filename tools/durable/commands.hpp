// How the verbs are registered: each group's file adds its CLI11 subcommands and their handlers
// to the app through `Cli`, in the order `durable --help` lists them (main.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "exit_codes.hpp"
#include "tool.hpp"

namespace durable::cli {

// The global options, the tool over them, and the exit code the verb that ran left.
struct Cli {
  Globals globals;
  Tool tool{globals};
  int exit_code = ok;

  Cli() = default;
  Cli(const Cli&) = delete;  // its tool refers to its globals
  Cli& operator=(const Cli&) = delete;

  // Runs `body` once the whole command line has parsed; what it throws becomes the exit code.
  // The values a verb's options are bound to must outlive the parse: each group keeps them in a
  // std::shared_ptr its bodies hold, and the app holds the bodies.
  void verb(CLI::App* sub, std::function<void()> body);
};

// The footer of a verb's --help: one example, and a pointer to the global options.
void example(CLI::App* sub, const std::string& text);

void add_schema_commands(CLI::App& app, Cli& cli);     // migrate (schema_commands.cpp)
void add_workflow_commands(CLI::App& app, Cli& cli);   // workflows list, show, ..., send (workflow_commands.cpp)
void add_schedule_commands(CLI::App& app, Cli& cli);   // schedules ... (schedule_commands.cpp)
void add_queue_commands(CLI::App& app, Cli& cli);      // queues ... (queue_commands.cpp)
void add_stats_command(CLI::App& app, Cli& cli);       // stats (report_commands.cpp)
void add_retention_commands(CLI::App& app, Cli& cli);  // prune, expire-idempotency-results (retention_commands.cpp)
void add_audit_command(CLI::App& app, Cli& cli);       // audit (report_commands.cpp)
void add_console_command(CLI::App& app, Cli& cli);     // console (console_command.cpp)

// The run actions under `workflows`: cancel, terminate, resume, fork, delete (run_actions.cpp).
void add_run_action_commands(CLI::App& workflows, Cli& cli);

}  // namespace durable::cli
