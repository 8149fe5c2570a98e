// Names and ids from callers, made safe to put in an error message: a NUL or control byte
// would cut the message short or garble a terminal, so such bytes show as \xNN.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace durable::detail {

inline std::string printable(std::string_view text, std::size_t max_bytes = 200) {
  std::string out;
  for (char c : text.substr(0, max_bytes)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  if (text.size() > max_bytes) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

}  // namespace durable::detail
