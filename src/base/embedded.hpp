// Text files compiled into the library (cmake/DurableEmbed.cmake): SQL statements and migrations.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>

namespace durable::detail {

struct EmbeddedFile {
  std::string_view name;  // its path under the embedded folder, without the extension
  std::string_view text;
};

// The file called `name`; std::logic_error when the build embedded none (a build mistake).
std::string_view embedded_text(std::span<const EmbeddedFile> files, std::string_view name);

// `text` with each `{{name}}` replaced by names.at(name). Only fixed SQL fragments (identifiers,
// expressions, other embedded files) are ever put in, never a value: values are bound as $n.
// std::logic_error on a `{{name}}` that `names` lacks or on an unclosed `{{`.
std::string render(std::string_view text, const std::map<std::string, std::string, std::less<>>& names);

}  // namespace durable::detail
