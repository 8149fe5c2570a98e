// The schema the migrations build, as pg_dump shows it: the same whether a schema is migrated in
// one go or upgraded a version at a time, and the same as the checked-in tests/pg/fixtures/schema.sql,
// so a change to the schema shows in review as a change to that file.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <unistd.h>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>

#include "pg/migrations.hpp"
#include "support/process.hpp"
#include "support/test_db.hpp"

using namespace durable;
using namespace durable::test;

namespace {

namespace fs = std::filesystem;

const std::string golden_file = std::string(DURABLE_TEST_FIXTURES) + "/schema.sql";

bool is_executable(const fs::path& file) { return ::access(file.c_str(), X_OK) == 0; }

// Where the test kit finds initdb: $DURABLE_PG_BIN, the newest /usr/lib/postgresql/<version>/bin,
// else PATH.
fs::path pg_dump_program() {
  if (const char* env = std::getenv("DURABLE_PG_BIN"); env != nullptr && *env != '\0') return fs::path(env) / "pg_dump";
  std::optional<std::pair<int, fs::path>> newest;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = entry.path().filename().string();
    int version = 0;
    const auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), version);
    const fs::path program = entry.path() / "bin" / "pg_dump";
    if (err == std::errc{} && end == name.data() + name.size() && is_executable(program) &&
        (!newest || version > newest->first)) {
      newest.emplace(version, program);
    }
  }
  if (newest) return newest->second;
  std::string_view rest = std::getenv("PATH") ? std::getenv("PATH") : "";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const fs::path program = fs::path(std::string(rest.substr(0, colon))) / "pg_dump";
    if (is_executable(program)) return program;
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
  }
  FAIL("pg_dump not found in $DURABLE_PG_BIN, /usr/lib/postgresql/<version>/bin or PATH");
  return {};
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// pg_dump's definitions of `schema`, normalised: the schema called `durable`, and without what
// varies from dump to dump or says nothing about the schema (comments, blank lines, session
// settings, psql's \restrict keys). pg_dump orders objects by kind and name, so both schemas'
// objects come in the same order.
std::string dump_schema(const TestDb& db, const std::string& schema) {
  static int n = 0;
  const std::string base = fmt::format("/tmp/durable-schema-dump-{}-{}", ::getpid(), n++);
  const int code = wait_for(spawn_program(pg_dump_program().string(), db.url(),
                                          {"--schema-only", "--schema=" + schema, "--no-owner", "--no-privileges",
                                           "--dbname=" + db.url(), "--file=" + base + ".sql"},
                                          {}, base + ".err"));
  const std::string dump = slurp(base + ".sql");
  const std::string errors = slurp(base + ".err");
  std::remove((base + ".sql").c_str());
  std::remove((base + ".err").c_str());
  INFO("pg_dump: " << errors);
  REQUIRE(code == 0);
  std::istringstream lines(dump);
  std::string normalised;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.starts_with("--") || line.starts_with("SET ") ||
        line.starts_with("SELECT pg_catalog.set_config") || line.starts_with("\\restrict") ||
        line.starts_with("\\unrestrict")) {
      continue;
    }
    for (auto at = line.find(schema); at != std::string::npos; at = line.find(schema, at)) {
      line.replace(at, schema.size(), "durable");
    }
    normalised += line + '\n';
  }
  return normalised;
}

// "" when the texts are the same, else their first differing line and the statement it is in.
std::string first_difference(const std::string& actual, const std::string& expected) {
  std::istringstream a(actual), e(expected);
  std::string line_a, line_e, statement;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, line_a));
    const bool more_e = static_cast<bool>(std::getline(e, line_e));
    if (!more_a && !more_e) return "";
    if (!more_a) line_a = "(end)";
    if (!more_e) line_e = "(end)";
    if (!line_e.starts_with(' ')) statement = line_e;
    if (line_a != line_e) {
      return fmt::format("line {}, in '{}': got\n  {}\nexpected\n  {}", line, statement, line_a, line_e);
    }
  }
}

}  // namespace

TEST_CASE("a schema migrated in one go is the schema upgraded from version 1 a version at a time",
          "[pg][migrations][golden]") {
  TestDb fresh;
  TestDb upgraded;
  {
    pqxx::connection conn(fresh.url());
    REQUIRE(pg::migrate(conn, fresh.schema()) == pg::latest_schema_version());
  }
  {
    pqxx::connection conn(upgraded.url());
    for (int version = 1; version <= pg::latest_schema_version(); ++version) {
      REQUIRE(pg::migrate(conn, upgraded.schema(), version) == version);
    }
  }
  CHECK(first_difference(dump_schema(upgraded, upgraded.schema()), dump_schema(fresh, fresh.schema())) == "");
}

TEST_CASE("the latest schema is tests/pg/fixtures/schema.sql", "[pg][migrations][golden]") {
  TestDb db;
  {
    pqxx::connection conn(db.url());
    REQUIRE(pg::migrate(conn, db.schema()) == pg::latest_schema_version());
  }
  const std::string dump = dump_schema(db, db.schema());
  if (const char* update = std::getenv("DURABLE_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(golden_file, std::ios::trunc) << dump;
    WARN("rewrote " << golden_file);
  }
  INFO(golden_file << " is not the schema the migrations build. If the change is meant (a new migration), "
                      "regenerate the file and commit it with the migration:\n  DURABLE_UPDATE_GOLDEN=1 "
                      "build/tools/durable-postgres -- build/tests/pg_tests \"[golden]\"\n(pg_dump 15 wrote it: "
                      "another major version may print the same schema differently)");
  CHECK(first_difference(dump, slurp(golden_file)) == "");
}
