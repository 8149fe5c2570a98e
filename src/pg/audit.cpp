#include "pg/audit.hpp"

#include "pg/statements.hpp"

namespace durable::pg {

std::int64_t insert_audit(pqxx::transaction_base& tx, const detail::Sealer& seal, const OperatorAction& action,
                          const std::string& action_id, const char* what, const std::string& workflow_id,
                          const std::string& run_id, Json details) {
  details["action_id"] = action_id;
  return exec1(tx, stmt::insert_audit, action.actor, what, seal.seal_text(action.reason), workflow_id, run_id,
               details.dump())[0]
      .as<std::int64_t>();
}

std::optional<Json> audited(pqxx::transaction_base& tx, const std::string& action_id) {
  auto rows = exec(tx, stmt::find_audit, action_id);
  if (rows.empty()) return std::nullopt;
  return Json::parse(rows[0][0].c_str());
}

}  // namespace durable::pg
