// Test SQL with placeholders: `{s}` the quoted schema, `{journal}` the journal with each event's
// workflow id beside it (journal rows name only their run), `{completed}` the completed activity
// steps as their completed events say (their task rows are gone): workflow_id, run_id, step, name,
// attempt, result, attempt_started_at, ended_at. Give each an alias, as any subquery.
#pragma once

#include <fmt/format.h>

#include <string>

namespace durable::test {

inline std::string test_sql(const std::string& sql, const std::string& quoted_schema) {
  const std::string journal = fmt::format(
      "(SELECT w.workflow_id, j.run_id, j.seq, j.kind, j.step, j.name, j.data, j.created_at FROM {0}.journal_events j "
      "JOIN {0}.workflows w USING (run_id))",
      quoted_schema);
  const std::string completed = fmt::format(
      "(SELECT w.workflow_id, j.run_id, j.step, j.name, (j.data->>'attempts')::int AS attempt, j.data->'result' AS "
      "result, {0}.from_us((j.data->>'started_us')::bigint) AS attempt_started_at, j.created_at AS ended_at "
      "FROM {0}.journal_events j JOIN {0}.workflows w USING (run_id) WHERE j.kind = 'activity_completed')",
      quoted_schema);
  return fmt::format(fmt::runtime(sql), fmt::arg("s", quoted_schema), fmt::arg("journal", journal),
                     fmt::arg("completed", completed));
}

}  // namespace durable::test
