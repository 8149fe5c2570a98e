// The tests' XorCodec as a codec plugin for the `durable` tool: config "KEY=SECRET[,KEY=SECRET...]",
// the first key current. An empty config or one without '=' makes no codec.
#include <durable/codec_plugin.hpp>
#include <sstream>

#include "support/xor_codec.hpp"

DURABLE_CODEC_PLUGIN(config) {
  std::map<std::string, std::string> secrets;
  std::string first, item;
  std::istringstream in(config);
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw durable::InvalidArgument("the test codec's config is KEY=SECRET[,...]");
    if (first.empty()) first = item.substr(0, eq);
    secrets[item.substr(0, eq)] = item.substr(eq + 1);
  }
  if (secrets.empty()) return nullptr;
  return new durable::test::XorCodec(std::move(secrets), first);
}
