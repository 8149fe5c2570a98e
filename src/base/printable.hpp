// Names and ids from callers, made safe to put in an error message: a NUL or control byte
// would cut the message short or garble a terminal, so such bytes show as \xNN.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace durable::detail {

// How many bytes the UTF-8 sequence at the start of `text` takes, or 0 when it is not one.
inline std::size_t utf8_sequence(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  const std::size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || n > text.size() || (n == 2 && lead < 0xC2) || (n == 4 && lead > 0xF4)) return 0;
  for (std::size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
  }
  if (n == 3 && ((lead == 0xE0 && byte(1) < 0xA0) || (lead == 0xED && byte(1) > 0x9F)))
    return 0;  // overlong, surrogate
  if (n == 4 && ((lead == 0xF0 && byte(1) < 0x90) || (lead == 0xF4 && byte(1) > 0x8F))) return 0;  // overlong, too high
  return n;
}

// Bytes that are not valid UTF-8 show as \xNN too, so the message is text a journal can store.
inline std::string printable(std::string_view text, std::size_t max_bytes = 200) {
  std::string out;
  const std::string_view shown = text.substr(0, max_bytes);
  for (std::size_t at = 0; at < shown.size();) {
    const auto byte = static_cast<unsigned char>(shown[at]);
    const std::size_t n = utf8_sequence(shown.substr(at));
    if (n == 0 || byte < 0x20 || byte == 0x7F) {
      out += fmt::format("\\x{:02x}", byte);
      ++at;
    } else {
      out.append(shown.substr(at, n));
      at += n;
    }
  }
  if (text.size() > max_bytes) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

}  // namespace durable::detail
