// The SQL files compiled into the library (cmake/DurableEmbed.cmake).
#pragma once

#include <span>

#include "base/embedded.hpp"

namespace durable::pg {

// src/pg/sql/: one named statement per file, and fragments/ that statements share.
std::span<const detail::EmbeddedFile> statement_files();

// src/pg/migrations/: NNN_name.sql, one per schema version, frozen once shipped.
std::span<const detail::EmbeddedFile> migration_files();

}  // namespace durable::pg
