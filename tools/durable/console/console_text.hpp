// Checks and escapes for text that reaches the console from outside: query values and ids that
// must be UTF-8 before they go to the management API or into an error message, and reasons and
// ids written to the log, where a newline or a terminal escape could forge or hide a line.
#pragma once

#include <string>
#include <string_view>

namespace durable::console::detail {

// Well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF) without a NUL byte.
bool is_text(std::string_view bytes);

// `text` on one line: control bytes as \n, \r, \t or \xNN, and a backslash doubled, so that the
// escaped form of one string is never that of another.
std::string one_line(std::string_view text);

}  // namespace durable::console::detail
