// The benchmark's workflow and engines (see bench_workflows.hpp).
#include "bench_workflows.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <pqxx/pqxx>

#include <stdexcept>

#ifdef DURABLE_BENCH_SODIUM
#include "codec/sodium_codec.hpp"
#endif

namespace bench {

namespace {

// Copied from a real run.
constexpr auto default_task_options = R"('{}'::jsonb)";  // every option at its stored default

}  // namespace

void register_definitions(durable::Engine& engine) {
  engine.add<Noop>().add<NoopChain>().add<PingReceiver>().add<NoopFanOut>().add<NoopLoop>();
  const std::string table = "\"" + engine.options().schema + "\".bench_rows";
  engine.add(InsertOne{table}).add<InsertChain>();
  engine.add(InsertAlone{engine.options().database_url, table}).add<InsertAloneChain>();
}

int InsertAlone::operator()(durable::ActivityContext& ctx, const int& value) const {
  thread_local std::unique_ptr<pqxx::connection> conn;
  if (!conn || !conn->is_open()) conn = std::make_unique<pqxx::connection>(url);
  pqxx::work tx(*conn);
  tx.exec_params0("INSERT INTO " + table + " (run, value) VALUES ($1, $2)", ctx.workflow_id().str(), value);
  tx.commit();
  return value;
}

void create_bench_rows(const std::string& url, const std::string& schema) {
  pqxx::connection conn(url);
  pqxx::nontransaction(conn).exec0("CREATE TABLE \"" + schema +
                                   "\".bench_rows (id bigserial PRIMARY KEY, run text NOT NULL, value int NOT NULL)");
}

durable::EngineOptions engine_options(const std::string& url, const std::string& schema) {
  durable::EngineOptions options;
  options.database_url = url;
  options.schema = schema;
#ifdef DURABLE_BENCH_SODIUM
  // Set by the codec measurement, for its engines here and in the worker processes it starts.
  if (const char* keys = std::getenv(codec_keys_env)) {
    options.codec = std::make_shared<durable_sodium::SodiumCodec>(keys, codec_keys_env);
  }
#endif
  return options;
}

void migrate(const std::string& url, const std::string& schema) {
  durable::Engine engine(engine_options(url, schema));
  register_definitions(engine);
  engine.start();
}

std::string loading_sql(const std::string& sql, const std::string& schema, int rows) {
  return fmt::format(fmt::runtime(sql), fmt::arg("s", schema), fmt::arg("rows", rows),
                     fmt::arg("workflow", NoopChain::name), fmt::arg("activity", Noop::name),
                     fmt::arg("options", default_task_options));
}

std::vector<std::string> one_step_history_sql() {
  return {R"(
INSERT INTO {s}.journal (run_id, seq, kind, step, name, data, created_at, more)
SELECT w.run_id, e.seq, e.kind, e.step, e.name,
       CASE WHEN e.seq = 2 THEN e.data || jsonb_build_object('started_us', {s}.epoch_us(w.created_at)) ELSE e.data END,
       CASE WHEN e.seq < 2 THEN w.created_at ELSE w.ended_at END,
       CASE WHEN e.seq = 2 THEN jsonb_build_array(CASE WHEN w.status = 'failed'
         THEN jsonb_build_array('workflow_failed', NULL, NULL,
                                jsonb_build_object('error_type', w.error_type, 'error_message', w.error_message))
         ELSE jsonb_build_array('workflow_completed', NULL, NULL, jsonb_build_object('result', 0)) END) END
FROM {s}.workflows w,
     (VALUES (0, 'workflow_started', NULL::integer, NULL::text, jsonb_build_object('input', 1)),
             (1, 'activity_scheduled', 0, '{activity}', jsonb_build_object('input', 0, 'options', {options})),
             (2, 'activity_completed', 0, '{activity}', jsonb_build_object('result', 0, 'attempts', 1)))
       AS e(seq, kind, step, name, data)
WHERE w.status <> 'running' AND w.next_seq = 4)"};
}

void check_sum(int sum, int steps) {
  if (sum != steps * (steps - 1) / 2) {
    throw std::runtime_error(
        fmt::format("a {}-step run returned {}, expected {}", steps, sum, steps * (steps - 1) / 2));
  }
}

void run_chain(durable::Engine& engine, const std::string& id, int steps) {
  check_sum(engine.start_workflow<NoopChain>(id, steps).result(result_timeout), steps);
}

namespace {
durable::EngineOptions adjusted(durable::EngineOptions o, const std::function<void(durable::EngineOptions&)>& adjust) {
  if (adjust) adjust(o);
  return o;
}
}  // namespace

StartedEngine::StartedEngine(const std::string& url, const std::function<void(durable::EngineOptions&)>& adjust)
    : schema(url), engine(adjusted(engine_options(url, schema.name()), adjust)) {
  register_definitions(engine);
  engine.start();
}

}  // namespace bench
