// Docs quote compiled examples: every block marked <!-- snippet: FILE#NAME --> in README.md
// and docs/*.md must equal the lines between `// [NAME]` markers in FILE, so docs cannot drift.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string region(const fs::path& file, const std::string& name) {
  const auto lines = lines_of(file);
  const std::string marker = "// [" + name + "]";
  std::string out;
  bool inside = false;
  for (const auto& line : lines) {
    if (line.find(marker) != std::string::npos) {
      if (inside) return out;
      inside = true;
      continue;
    }
    if (inside) out += line + "\n";
  }
  FAIL("no region [" << name << "] in " << file);
  return {};
}

}  // namespace

TEST_CASE("code quoted in the docs matches the compiled examples", "[docs]") {
  const fs::path root = DURABLE_SOURCE_DIR;
  std::vector<fs::path> docs{root / "README.md"};
  for (const auto& entry : fs::directory_iterator(root / "docs")) {
    if (entry.path().extension() == ".md") docs.push_back(entry.path());
  }
  int quoted = 0;
  for (const auto& doc : docs) {
    const auto lines = lines_of(doc);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string tag = "<!-- snippet: ";
      if (lines[i].rfind(tag, 0) != 0) continue;
      const std::string ref = lines[i].substr(tag.size(), lines[i].find(" -->") - tag.size());
      const auto hash = ref.find('#');
      REQUIRE(hash != std::string::npos);
      std::string block;
      std::size_t j = i + 2;  // skip the ``` fence line
      for (; j < lines.size() && lines[j].rfind("```", 0) != 0; ++j) block += lines[j] + "\n";
      INFO(doc.filename().string() << " line " << i + 1 << " quotes " << ref);
      CHECK(block == region(root / ref.substr(0, hash), ref.substr(hash + 1)));
      ++quoted;
    }
  }
  CHECK(quoted > 0);
}
