#include "base/embedded.hpp"

#include <algorithm>
#include <stdexcept>

namespace durable::detail {

std::string_view embedded_text(std::span<const EmbeddedFile> files, std::string_view name) {
  const auto it = std::find_if(files.begin(), files.end(), [&](const EmbeddedFile& f) { return f.name == name; });
  if (it == files.end()) throw std::logic_error("no embedded file named '" + std::string(name) + "'");
  return it->text;
}

std::string render(std::string_view text, const std::map<std::string, std::string, std::less<>>& names) {
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  while (true) {
    const auto open = text.find("{{", at);
    out.append(text.substr(at, open == std::string_view::npos ? std::string_view::npos : open - at));
    if (open == std::string_view::npos) return out;
    const auto close = text.find("}}", open + 2);
    if (close == std::string_view::npos) throw std::logic_error("an unclosed {{ in embedded text");
    const auto name = text.substr(open + 2, close - open - 2);
    const auto it = names.find(name);
    if (it == names.end())
      throw std::logic_error("embedded text names {{" + std::string(name) + "}}, which is not given");
    out.append(it->second);
    at = close + 2;
  }
}

}  // namespace durable::detail
