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

// Depth-first, bounded by max_payload_depth, so a hostile payload cannot exhaust the stack.
std::optional<Problem> find_problem(const Json& j, int depth) {
  if (depth > max_payload_depth) {
    return Problem{"", fmt::format("nesting deeper than {} levels", max_payload_depth)};
  }
  auto inside = [](std::optional<Problem> p, const std::string& step) {
    if (p) p->path = "/" + step + p->path;
    return p;
  };
  switch (j.type()) {
    case Json::value_t::number_float:
      if (!std::isfinite(j.get<double>())) return Problem{"", "NaN or Infinity (JSON has neither)"};
      return std::nullopt;
    case Json::value_t::string:
      if (auto rule = string_problem(j.get_ref<const std::string&>())) return Problem{"", *rule};
      return std::nullopt;
    case Json::value_t::array:
      for (std::size_t i = 0; i < j.size(); ++i) {
        if (auto p = inside(find_problem(j[i], depth + 1), std::to_string(i))) return p;
      }
      return std::nullopt;
    case Json::value_t::object:
      for (const auto& [key, value] : j.items()) {
        if (auto rule = string_problem(key)) return Problem{"/" + key.substr(0, 40), "a key with " + *rule};
        if (auto p = inside(find_problem(value, depth + 1), key)) return p;
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace

void check_payload(const Json& payload, const std::string& what) {
  if (auto problem = find_problem(payload, 1)) {
    throw PayloadError(fmt::format("{} cannot be stored: it holds {} at '{}'", what, problem->rule,
                                   problem->path.empty() ? "/" : problem->path));
  }
  const std::size_t bytes = payload.dump().size();
  if (bytes > max_payload_bytes) {
    throw PayloadError(fmt::format("{} is {} bytes as JSON; the limit is {} bytes: keep large data elsewhere (a "
                                   "table, an object store) and pass a reference to it",
                                   what, bytes, max_payload_bytes));
  }
}

}  // namespace durable::detail
