// The migration files this build embeds (src/pg/migrations/), and the check of their numbering.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "pg/migrations.hpp"
#include "pg/sql_files.hpp"
#include "support/expect.hpp"

using namespace durable;
using durable::detail::EmbeddedFile;
using durable::test::expect_throw;

TEST_CASE("this build's migration files are numbered 1 to the latest version", "[unit][migrations]") {
  CHECK(pg::ordered_migrations(pg::migration_files()).size() == pg::migration_files().size());
  CHECK(pg::latest_schema_version() == static_cast<int>(pg::migration_files().size()));
}

TEST_CASE("a migration runs without the comment lines that head its file", "[unit][migrations]") {
  const std::vector<EmbeddedFile> files = {{"001_first", "-- why\n-- and more\n\nCREATE TABLE {{s}}.t ();\n"},
                                           {"002_second", "\n-- kept: not a heading\nDROP TABLE {{s}}.t;\n"}};
  const auto texts = pg::ordered_migrations(files);
  REQUIRE(texts.size() == 2);
  CHECK(texts[0] == "\nCREATE TABLE {{s}}.t ();\n");
  CHECK(texts[1] == "\n-- kept: not a heading\nDROP TABLE {{s}}.t;\n");
}

TEST_CASE("migration files with a gap, a number twice or no number are a logic_error", "[unit][migrations]") {
  expect_throw<std::logic_error>(
      [] {
        pg::ordered_migrations(std::vector<EmbeddedFile>{{"001_a", ""}, {"003_c", ""}});
      },
      "src/pg/migrations/003_c.sql: there is no migration 2 before it");
  expect_throw<std::logic_error>(
      [] {
        pg::ordered_migrations(std::vector<EmbeddedFile>{{"001_a", ""}, {"002_b", ""}, {"002_c", ""}});
      },
      "src/pg/migrations/002_c.sql: migration 2 is there twice");
  for (const char* name : {"1_a", "0001_a", "001", "001_", "001a", "a_001", "-01_a", "000_a"}) {
    expect_throw<std::logic_error>(
        [&] {
          pg::ordered_migrations(std::vector<EmbeddedFile>{{name, ""}});
        },
        "not named NNN_name.sql");
  }
  CHECK(pg::ordered_migrations(std::vector<EmbeddedFile>{}).empty());
}
