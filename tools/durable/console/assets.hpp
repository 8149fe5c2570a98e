// The console's HTML, CSS and JS, embedded at build time (embed_assets.cmake).
#pragma once

#include <cstddef>
#include <vector>

namespace durable::console::detail {

struct Asset {
  const char* name;          // the file name under assets/, e.g. "console.js"
  const char* content_type;  // from its extension
  const unsigned char* data;
  std::size_t size;
};

const std::vector<Asset>& assets();

}  // namespace durable::console::detail
