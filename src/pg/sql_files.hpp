// The SQL files compiled into the library (cmake/DurableEmbed.cmake).
#pragma once

#include <span>

#include "base/embedded.hpp"

namespace durable::pg {

// src/pg/sql/: one named statement per file, and fragments/ that statements share.
std::span<const detail::EmbeddedFile> statement_files();

}  // namespace durable::pg
