#include "console_text.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdint>

namespace durable::console::detail {

bool is_text(std::string_view bytes) {
  // The smallest code point each sequence length may hold: anything below is an overlong form.
  static constexpr std::array<std::uint32_t, 4> smallest{0, 0x80, 0x800, 0x10000};
  for (std::size_t i = 0; i < bytes.size();) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    if (lead == 0) return false;
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t more = 0;
    std::uint32_t code = 0;
    if ((lead & 0xE0) == 0xC0) {
      more = 1;
      code = lead & 0x1Fu;
    } else if ((lead & 0xF0) == 0xE0) {
      more = 2;
      code = lead & 0x0Fu;
    } else if ((lead & 0xF8) == 0xF0) {
      more = 3;
      code = lead & 0x07u;
    } else {
      return false;  // a continuation byte where a character should start, or 0xF8..0xFF
    }
    if (bytes.size() - i <= more) return false;  // cut short
    for (std::size_t k = 1; k <= more; ++k) {
      const auto next = static_cast<unsigned char>(bytes[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3Fu);
    }
    if (code < smallest[more] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += more + 1;
  }
  return true;
}

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (byte < 0x20 || byte == 0x7F) {
          out += fmt::format("\\x{:02x}", byte);
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace durable::console::detail
