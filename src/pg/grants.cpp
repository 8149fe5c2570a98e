#include "pg/grants.hpp"

#include <fmt/format.h>

#include <vector>

#include "base/printable.hpp"
#include "durable/errors.hpp"
#include "pg/connection_pool.hpp"
#include "pg/migrations.hpp"

namespace durable::pg {
namespace {

// The statements that give a role its privileges on a schema, as format() templates of the
// schema's name, the role's and the schema owner's (%I quotes each as an identifier; %3$I the
// owner's). Engines write rows (not the
// schema's version) and take task and audit ids from the sequences; readers only read. Neither may create, alter, drop or
// truncate anything: every DDL is the owner's, in a migration.
std::vector<std::string> grants_of(bool engine) {
  std::vector<std::string> sql = {"GRANT USAGE ON SCHEMA %I TO %I",
                                  "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA %I TO %I"};
  if (engine) {
    sql.emplace_back("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO %I");
    sql.emplace_back("REVOKE INSERT, UPDATE, DELETE ON %I.schema_version FROM %I");  // the owner's alone
    sql.emplace_back("GRANT USAGE ON ALL SEQUENCES IN SCHEMA %I TO %I");             // nextval, no setval
    // The same on what later migrations create (the owner runs them), whoever grants now.
    sql.emplace_back(
        "ALTER DEFAULT PRIVILEGES FOR ROLE %3$I IN SCHEMA %1$I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %2$I");
    sql.emplace_back("ALTER DEFAULT PRIVILEGES FOR ROLE %3$I IN SCHEMA %1$I GRANT USAGE ON SEQUENCES TO %2$I");
  } else {
    sql.emplace_back("GRANT SELECT ON ALL TABLES IN SCHEMA %I TO %I");
    sql.emplace_back("ALTER DEFAULT PRIVILEGES FOR ROLE %3$I IN SCHEMA %1$I GRANT SELECT ON TABLES TO %2$I");
  }
  sql.emplace_back("ALTER DEFAULT PRIVILEGES FOR ROLE %3$I IN SCHEMA %1$I GRANT EXECUTE ON FUNCTIONS TO %2$I");
  return sql;
}

}  // namespace

void grant_roles(pqxx::connection& conn, const std::string& schema, const SchemaRoles& roles) {
  validate_schema_name(schema);
  {
    // A GRANT by a role that may not give it only warns: refuse first, naming who may.
    pqxx::nontransaction tx(conn);
    const auto owner = tx.exec_params(
        "SELECT n.nspowner::regrole::text AS owner, pg_has_role(current_user, n.nspowner, 'USAGE') AS may, "
        "current_user AS me FROM pg_namespace n WHERE n.nspname = $1",
        schema);
    if (!owner.empty() && !owner[0]["may"].as<bool>()) {
      throw DatabaseRefused(
          fmt::format("only the schema's owner grants its roles: schema '{}' is role {}'s, and this "
                      "session is role {}'s: connect as {} (the role that migrates it)",
                      schema, owner[0]["owner"].c_str(), owner[0]["me"].c_str(), owner[0]["owner"].c_str()),
          "42501");
    }
  }
  if (schema_version_of(conn, schema) == 0) {
    throw InvalidArgument(fmt::format(
        "schema '{}' has no durable tables to grant: migrate it first (`durable migrate`), then grant", schema));
  }
  pqxx::work tx(conn);
  // One grant at a time per schema, and none during a migration step (migrate locks the same
  // table): two at once fail. A lock only the owner can take, so no other role makes this wait.
  // built SQL: a lock of the schema's table; the schema name is an identifier (validate_schema_name)
  tx.exec0(fmt::format("LOCK TABLE {}.schema_version IN SHARE ROW EXCLUSIVE MODE", quoted(schema)));
  for (const auto* list : {&roles.engines, &roles.readers}) {
    for (const std::string& role : *list) {
      if (tx.exec_params1("SELECT count(*) FROM pg_roles WHERE rolname = $1", role)[0].as<int>() == 0) {
        throw InvalidArgument(
            fmt::format("role '{}' does not exist: create it first (CREATE ROLE ... LOGIN), then grant it schema '{}'",
                        detail::printable(role, 63), schema));
      }
      for (const std::string& grant : grants_of(list == &roles.engines)) {
        const std::string sql =
            tx.exec_params1(
                  "SELECT format($1, $2::text, $3::text, (SELECT r.rolname::text FROM pg_namespace n JOIN "
                  "pg_roles r ON r.oid = n.nspowner WHERE n.nspname = $2))",
                  grant, schema, role)[0]
                .c_str();
        // built SQL: GRANT takes no parameters; the server's format() quoted both names (%I)
        tx.exec0(sql);
      }
    }
  }
  tx.commit();
}

}  // namespace durable::pg
