// What the roles that use a schema may do there (durable/schema.hpp, SchemaRoles): its owner
// migrates it; engine roles read and write its rows; reader roles read them.
#pragma once

#include <pqxx/pqxx>
#include <string>

#include "durable/schema.hpp"

namespace durable::pg {

// Grants each role of `roles` its privileges on every table, sequence and function of `schema` as
// they are now, in one transaction of `conn` (the owner's). Throws InvalidArgument, granting
// nothing, when a role does not exist.
void grant_roles(pqxx::connection& conn, const std::string& schema, const SchemaRoles& roles);

}  // namespace durable::pg
