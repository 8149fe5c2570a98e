// What every verb shares: the global options, the engine made from them when a verb first needs
// it, and printing as text or as JSON.
#pragma once

#include <durable/durable.hpp>
#include <memory>
#include <string>

namespace durable::cli {

// The options every verb takes (durable --help).
struct Globals {
  std::string database_url, schema = "durable", actor, codec_plugin, codec_config;
  bool json = false;
  bool pooler_mode = false;  // EngineOptions::pooler_mode: through PgBouncer in transaction mode
};

// Throws InvalidArgument when neither `url` nor DURABLE_DATABASE_URL names a database.
void check_database_url(const std::string& url);

class Tool {
 public:
  explicit Tool(Globals& g) : g_(g) {}

  Engine& engine();  // made on first use: a verb that fails on its input needs no database
  Runs& runs() { return engine().runs(); }

  // The latest run of `workflow_id`, or its run `run_id` (which must be of that id).
  RunInfo run_of(const std::string& workflow_id, const std::string& run_id);

  OperatorAction action(const std::string& reason) const { return {g_.actor, reason}; }

  // Prints `doc` under --json, else `human`.
  void print(const Json& doc, const std::string& human) const;

 private:
  Globals& g_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace durable::cli
