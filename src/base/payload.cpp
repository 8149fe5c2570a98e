#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "durable/detail/payload.hpp"

namespace durable::detail {

namespace {

// Length of the UTF-8 sequence starting at s[i], or 0 when it is not valid UTF-8
// (overlong forms, surrogates and code points past U+10FFFF included).
std::size_t utf8_sequence(const std::string& s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned min = 0, cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2, min = 0x80, cp = c & 0x1Fu;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, min = 0x800, cp = c & 0x0Fu;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, min = 0x10000, cp = c & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// What is wrong with a string, if anything.
std::optional<std::string> string_problem(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '\0') return "a NUL character (PostgreSQL's jsonb cannot store it: encode binary data, e.g. as base64)";
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return fmt::format("invalid UTF-8 at byte {} (send text as UTF-8, binary data e.g. as base64)", i);
    i += n;
  }
  return std::nullopt;
}

struct Problem {
  std::string path;  // JSON pointer to where it is
  std::string rule;
};

// Compact JSON never takes more than this per value: a number prints in at most 24
// characters, a string byte in at most 6 (\u00XX), plus quotes, brackets, colons and commas.
constexpr std::size_t max_number_chars = 32;
constexpr std::size_t max_chars_per_string_byte = 6;

// Depth-first, bounded by max_payload_depth, so a hostile payload cannot exhaust the stack.
// Adds to `size_bound` an upper bound of the payload's size as compact JSON.
std::optional<Problem> find_problem(const Json& j, int depth, std::size_t& size_bound) {
  if (depth > max_payload_depth) {
    return Problem{"", fmt::format("nesting deeper than {} levels", max_payload_depth)};
  }
  auto inside = [](Problem p, const std::string& step) {
    p.path = "/" + step + p.path;
    return p;
  };
  size_bound += 1;  // the comma (or colon) before it
  switch (j.type()) {
    case Json::value_t::number_float:
      if (!std::isfinite(j.get<double>())) return Problem{"", "NaN or Infinity (JSON has neither)"};
      size_bound += max_number_chars;
      return std::nullopt;
    case Json::value_t::string: {
      const auto& text = j.get_ref<const std::string&>();
      if (auto rule = string_problem(text)) return Problem{"", *rule};
      size_bound += 2 + max_chars_per_string_byte * text.size();
      return std::nullopt;
    }
    case Json::value_t::array:
      size_bound += 2;
      for (std::size_t i = 0; i < j.size(); ++i) {
        if (auto p = find_problem(j[i], depth + 1, size_bound)) return inside(*p, std::to_string(i));
      }
      return std::nullopt;
    case Json::value_t::object:
      size_bound += 2;
      for (const auto& [key, value] : j.items()) {
        if (auto rule = string_problem(key)) return Problem{"/" + key.substr(0, 40), "a key with " + *rule};
        size_bound += 2 + max_chars_per_string_byte * key.size();
        if (auto p = find_problem(value, depth + 1, size_bound)) return inside(*p, key);
      }
      return std::nullopt;
    default:  // integers, booleans, null
      size_bound += max_number_chars;
      return std::nullopt;
  }
}

}  // namespace

void check_payload(const Json& payload, const std::string& what) {
  if (payload.is_object() && payload.size() == 1 && payload.begin().key() == encoded_field) {
    throw PayloadError(fmt::format(
        "{} cannot be stored: an object whose only field is \"{}\" is the form durable stores encoded values in, "
        "and it would be read back as one; rename the field or add another (docs/codec.md)",
        what, encoded_field));
  }
  std::size_t size_bound = 0;
  if (auto problem = find_problem(payload, 1, size_bound)) {
    throw PayloadError(fmt::format("{} cannot be stored: it holds {} at '{}'", what, problem->rule,
                                   problem->path.empty() ? "/" : problem->path));
  }
  if (size_bound <= max_payload_bytes) return;  // the common case: no need to print it to measure it
  const std::size_t bytes = payload.dump().size();
  if (bytes > max_payload_bytes) {
    throw PayloadError(
        fmt::format("{} is {} bytes as JSON; the limit is {} bytes: keep large data elsewhere (a "
                    "table, an object store) and pass a reference to it",
                    what, bytes, max_payload_bytes));
  }
}

}  // namespace durable::detail
