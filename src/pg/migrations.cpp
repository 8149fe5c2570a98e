// The schema's migrations are src/pg/migrations/NNN_name.sql, compiled in; version N is the Nth
// file, run once, in its own transaction, `{{s}}` the quoted schema name. A file is frozen once it
// shipped (schemas out there were built by it): a change to the schema is a new file, numbered next.
#include "pg/migrations.hpp"

#include <fmt/format.h>
#include "base/log.hpp"
#include "base/printable.hpp"

#include <algorithm>
#include <charconv>
#include <regex>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "base/checks.hpp"
#include "durable/errors.hpp"
#include "durable/schema.hpp"
#include "pg/connection_pool.hpp"
#include "pg/grants.hpp"
#include "pg/sql_files.hpp"

namespace durable::pg {

namespace {

// A migration's text as it is run: its file without the comment lines that head it (they say why
// it exists). What follows them, from the blank line on, is exactly what ran before migrations were
// files.
std::string_view without_header(std::string_view file) {
  std::size_t at = 0;
  while (file.substr(at).starts_with("--")) {
    const auto line_end = file.find('\n', at);
    at = line_end == std::string_view::npos ? file.size() : line_end + 1;
  }
  return file.substr(at);
}

// This build's migrations, checked once: a misnumbered file fails the first use, in every test.
const std::vector<std::string_view>& migrations() {
  static const std::vector<std::string_view> texts = ordered_migrations(migration_files());
  return texts;
}

}  // namespace

std::vector<std::string_view> ordered_migrations(std::span<const detail::EmbeddedFile> files) {
  std::vector<std::string_view> texts;
  for (const auto& file : files) {
    // Sorted by name, the Nth file must be numbered N.
    const int expected = static_cast<int>(texts.size()) + 1;
    const auto name = file.name;
    const bool well_named = name.size() > 4 && name[3] == '_' &&
                            std::all_of(name.begin(), name.begin() + 3, [](char c) { return c >= '0' && c <= '9'; });
    int number = 0;
    if (well_named) std::from_chars(name.data(), name.data() + 3, number);
    if (!well_named || number < 1 || number != expected) {
      throw std::logic_error(fmt::format(
          "src/pg/migrations/{}.sql: {}; migrations are NNN_name.sql, numbered from 001 with no gap", file.name,
          !well_named || number < 1 ? "not named NNN_name.sql"
          : number < expected       ? fmt::format("migration {} is there twice", number)
                                    : fmt::format("there is no migration {} before it", expected)));
    }
    texts.push_back(without_header(file.text));
  }
  return texts;
}

std::string migration_sql(int version, const std::string& schema) {
  validate_schema_name(schema);
  if (version < 1 || version > latest_schema_version()) {
    throw std::out_of_range(fmt::format("no migration {}: this build has 1 to {}", version, latest_schema_version()));
  }
  return detail::render(migrations()[static_cast<std::size_t>(version - 1)], {{"s", quoted(schema)}});
}

int latest_schema_version() { return static_cast<int>(migrations().size()); }

void validate_schema_name(const std::string& schema) {
  static const std::regex allowed("[a-z_][a-z0-9_]{0,47}");
  if (!std::regex_match(schema, allowed)) {
    throw InvalidSchemaName(
        fmt::format("schema name '{}' is not allowed: use 1 to 48 characters of lowercase letters, digits and "
                    "underscores, not starting with a digit (e.g. \"durable\" or \"orders_prod\")",
                    detail::printable(schema)));
  }
}

int schema_version_of(pqxx::connection& conn, const std::string& schema) {
  validate_schema_name(schema);
  pqxx::nontransaction tx(conn);
  const bool exists =
      tx.exec_params1("SELECT to_regclass($1) IS NOT NULL", quoted(schema) + ".schema_version")[0].as<bool>();
  // built SQL: the schema name, an identifier (validate_schema_name); the table may not exist yet
  return exists ? tx.exec1(fmt::format("SELECT coalesce(max(version), 0) FROM {}.schema_version", quoted(schema)))[0]
                      .as<int>()
                : 0;
}

void check_schema_version(pqxx::connection& conn, const std::string& schema) {
  const int version = schema_version_of(conn, schema);
  if (version != latest_schema_version()) {
    throw DatabaseError(fmt::format(
        "schema '{}' is at version {} but this build reads version {}: {}", schema, version, latest_schema_version(),
        version < latest_schema_version()
            ? "migrate it first (`durable migrate`, or start an engine of this build with migrate_schema on)"
            : "use a build of durable as new as the engines on it"));
  }
}

namespace {
DatabaseError newer_than_build(const std::string& schema, int version) {
  return DatabaseError(fmt::format("schema '{}' is at version {}, newer than this build knows ({}): upgrade durable",
                                   schema, version, latest_schema_version()));
}

// How long a migration waits for the lock that creates a schema: held for a moment by another
// process creating the same schema; past that, a session outside the schema's roles holds it.
constexpr const char* creation_lock_timeout = "5s";

// Who holds schema `schema`'s creation lock (advisory: no row of the schema exists yet to lock,
// and any role that may connect can take it), for the error that says whom to stop.
std::string creation_lock_holders(pqxx::connection& conn, const std::string& schema) {
  pqxx::nontransaction tx(conn);
  std::string holders;
  for (const auto& r : tx.exec_params(
           "SELECT a.pid, a.usename, a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
           "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
           "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
           "AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended('durable.migrate:' || $1, 0)",
           schema)) {
    holders += fmt::format("{}pid {} (role '{}', application '{}')", holders.empty() ? "" : ", ", r[0].c_str(),
                           detail::printable(r[1].c_str(), 63), detail::printable(r[2].c_str(), 63));
  }
  return holders.empty() ? "a session that has ended since" : holders;
}

// Creates the schema and its version table where either is missing, under the schema's creation
// lock, waited for at most creation_lock_timeout.
void create_schema_if_missing(pqxx::connection& conn, const std::string& schema) {
  const std::string s = quoted(schema);
  bool timed_out = false;
  try {
    pqxx::work tx(conn);
    const auto missing_now = [&] {
      return tx.exec_params1(
          "SELECT NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS schema, to_regclass($2) IS NULL AS log",
          schema, s + ".schema_version");
    };
    auto missing = missing_now();
    if (!missing["schema"].as<bool>() && !missing["log"].as<bool>()) return;
    tx.exec_params("SELECT set_config('lock_timeout', $1, true)", creation_lock_timeout);
    tx.exec_params("SELECT pg_advisory_xact_lock(hashtextextended('durable.migrate:' || $1, 0))", schema);
    // Each only when missing: CREATE SCHEMA needs CREATE on the database even when the schema is
    // there (an owner given its schema by an administrator need not have it), and a process that
    // waited here behind another's creation may find nothing left to do.
    missing = missing_now();
    // built SQL: DDL of the schema name, an identifier (validate_schema_name)
    if (missing["schema"].as<bool>()) tx.exec0(fmt::format("CREATE SCHEMA {}", s));
    if (missing["log"].as<bool>()) {
      // built SQL: as above
      tx.exec0(fmt::format(
          "CREATE TABLE {}.schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
          s));
    }
    tx.commit();
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() != "55P03") throw;  // lock_not_available: the wait above timed out
    timed_out = true;
  }
  if (timed_out) {
    throw DatabaseRefused(
        fmt::format("schema '{}' does not exist yet and another session has held the lock that creates it for over "
                    "{}: {}. If it is not a `durable migrate` of this schema, end it (SELECT "
                    "pg_terminate_backend(pid)) and migrate again",
                    schema, creation_lock_timeout, creation_lock_holders(conn, schema)),
        "55P03");
  }
}

// Applies the next migration the schema lacks, up to `up_to`; returns the version the schema is
// at, and whether it applied one. The schema's version table is locked to the end of the step: a
// lock only roles that may write the table (its owner) can take, so concurrent migrators apply
// each migration once, in turn, and no other role can make them wait.
std::pair<int, bool> migrate_one(pqxx::connection& conn, const std::string& schema, int up_to) {
  const std::string s = quoted(schema);
  pqxx::work tx(conn);
  // built SQL: a lock of the schema's table; the schema name is an identifier (validate_schema_name)
  tx.exec0(fmt::format("LOCK TABLE {}.schema_version IN SHARE ROW EXCLUSIVE MODE", s));
  // built SQL: as above
  const int version = tx.exec1(fmt::format("SELECT coalesce(max(version), 0) FROM {}.schema_version", s))[0].as<int>();
  const int next = version + 1;
  if (next > std::min(up_to, latest_schema_version())) return {version, false};
  // built SQL: a migration's DDL (src/pg/migrations/), the schema name put in (an identifier)
  tx.exec0(migration_sql(next, schema));
  tx.exec_params0(fmt::format("INSERT INTO {}.schema_version (version) VALUES ($1)", s), next);
  tx.commit();
  detail::logger().info("schema '{}' migrated to version {}", schema, next);
  return {next, true};
}
}  // namespace

int migrate(pqxx::connection& conn, const std::string& schema, int up_to) {
  if (up_to < 0) up_to = latest_schema_version();
  validate_schema_name(schema);
  // At this build's version already: no lock and no DDL, which a role that may only use the schema
  // (grant_schema_roles) could not run.
  const int found = up_to >= latest_schema_version() ? schema_version_of(conn, schema) : -1;
  if (found == latest_schema_version()) return found;
  if (found > latest_schema_version()) throw newer_than_build(schema, found);
  int version = 0;
  try {
    create_schema_if_missing(conn, schema);
    for (bool applied = true; applied;) std::tie(version, applied) = migrate_one(conn, schema, up_to);
  } catch (const pqxx::insufficient_privilege& e) {
    throw DatabaseRefused(
        fmt::format("schema '{}' is at version {} and this build needs version {}, but this role may not migrate "
                    "it ({}): run `durable migrate` as the schema's owner (docs/operations.md, Roles and "
                    "privileges), then start this engine again",
                    schema, std::max(found, version), latest_schema_version(), detail::printable(e.what())),
        "42501");
  }
  if (version > latest_schema_version()) throw newer_than_build(schema, version);
  return version;
}

}  // namespace durable::pg

namespace durable {

namespace {

// One session for an administrative read or write: a server that cannot be reached is
// DatabaseUnavailable at once (no retries: an operator or a deploy script is waiting), any other
// refusal DatabaseRefused.
template <typename Work>
auto with_session(const std::string& database_url, const std::string& schema, Work work) {
  pg::validate_schema_name(schema);
  const std::string url = detail::database_url_or_env(database_url, "the database URL");
  pg::check_conninfo(url, "the database URL");
  try {
    pqxx::connection conn(url);
    return work(conn);
  } catch (const pqxx::broken_connection& e) {
    throw DatabaseUnavailable(fmt::format("cannot reach the database: {}", detail::printable(e.what())));
  } catch (const pqxx::sql_error& e) {
    throw pg::refused(e);
  }
}

}  // namespace

int latest_schema_version() { return pg::latest_schema_version(); }

SchemaVersion schema_version(const std::string& database_url, const std::string& schema) {
  return with_session(database_url, schema, [&](pqxx::connection& conn) {
    return SchemaVersion{pg::schema_version_of(conn, schema), pg::latest_schema_version()};
  });
}

int migrate_schema(const std::string& database_url, const std::string& schema) {
  return with_session(database_url, schema, [&](pqxx::connection& conn) { return pg::migrate(conn, schema); });
}

void grant_schema_roles(const std::string& database_url, const std::string& schema, const SchemaRoles& roles) {
  with_session(database_url, schema, [&](pqxx::connection& conn) { pg::grant_roles(conn, schema, roles); });
}

}  // namespace durable
