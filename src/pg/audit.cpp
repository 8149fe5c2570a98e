#include "pg/audit.hpp"

#include <fmt/format.h>

namespace durable::pg {

std::int64_t insert_audit(pqxx::transaction_base& tx, const std::string& s, const detail::Sealer& seal,
                          const OperatorAction& action, const std::string& action_id, const char* what,
                          const std::string& workflow_id, const std::string& run_id, Json details) {
  details["action_id"] = action_id;
  return tx
      .exec_params1(
          fmt::format("INSERT INTO {}.audit (actor, action, reason, workflow_id, run_id, details) "
                      "VALUES ($1, $2, $3, nullif($4, ''), nullif($5, '')::uuid, $6::jsonb) RETURNING audit_id",
                      s),
          action.actor, what, seal.seal_text(action.reason), workflow_id, run_id, details.dump())[0]
      .as<std::int64_t>();
}

std::optional<Json> audited(pqxx::transaction_base& tx, const std::string& s, const std::string& action_id) {
  auto rows =
      tx.exec_params(fmt::format("SELECT details::text FROM {}.audit WHERE details->>'action_id' = $1", s), action_id);
  if (rows.empty()) return std::nullopt;
  return Json::parse(rows[0][0].c_str());
}

}  // namespace durable::pg
