// Writing the audit trail (durable/audit.hpp): an operator action's entry goes in the action's own
// transaction, so an action is audited exactly when it happened.
#pragma once

#include <pqxx/pqxx>

#include <cstdint>
#include <optional>
#include <string>

#include "base/sealer.hpp"
#include "durable/audit.hpp"

namespace durable::pg {

// Each action's entry carries a fresh `action_id` in its details: a retry after a lost answer
// finds its own entry by it (audited), never another action's. The reason, an operator's text,
// is stored as `seal` encodes it (EngineOptions::codec).
std::int64_t insert_audit(pqxx::transaction_base& tx, const detail::Sealer& seal, const OperatorAction& action,
                          const std::string& action_id, const char* what, const std::string& workflow_id,
                          const std::string& run_id, Json details);

// After a lost answer: the details of this very action's entry, if it went in.
std::optional<Json> audited(pqxx::transaction_base& tx, const std::string& action_id);

}  // namespace durable::pg
