#include "tool.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "codec_plugin.hpp"
#include "exit_codes.hpp"

namespace durable::cli {

void check_database_url(const std::string& url) {
  const char* env = std::getenv("DURABLE_DATABASE_URL");
  if (url.empty() && !(env && *env)) {
    throw InvalidArgument(
        "no database: pass --database-url (a libpq URI such as postgresql://user@host/app) or set "
        "DURABLE_DATABASE_URL");
  }
}

Engine& Tool::engine() {
  if (!engine_) {
    check_database_url(g_.database_url);
    EngineOptions o;
    o.database_url = g_.database_url;
    o.schema = g_.schema;
    o.instance = "durable-cli";
    o.connection_pool_size = 2;
    o.migrate_schema = false;  // only `durable migrate` migrates
    o.pooler_mode = g_.pooler_mode;
    o.database_unavailable_after = std::chrono::seconds{5};
    if (!g_.codec_plugin.empty()) o.codec = load_codec_plugin(g_.codec_plugin, g_.codec_config);
    engine_ = std::make_unique<Engine>(o);
  }
  return *engine_;
}

RunInfo Tool::run_of(const std::string& workflow_id, const std::string& run_id) {
  if (run_id.empty()) return runs().latest(WorkflowId{workflow_id});
  RunInfo run = runs().get(RunId{run_id});
  if (run.workflow_id != workflow_id) {
    throw NotFound(
        fmt::format("run {} is not a run of workflow '{}' (it is of '{}')", run_id, workflow_id, run.workflow_id));
  }
  return run;
}

void Tool::print(const Json& doc, const std::string& human) const {
  std::cout << (g_.json ? doc.dump(2) + "\n" : human);
}

}  // namespace durable::cli
