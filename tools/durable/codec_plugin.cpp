#include "codec_plugin.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <durable/codec_plugin.hpp>
#include <durable/errors.hpp>

namespace durable::cli {

std::shared_ptr<const PayloadCodec> load_codec_plugin(const std::string& path, const std::string& config) {
  // Never closed: the codec's code lives in it for as long as the process.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    throw InvalidArgument(
        fmt::format("--codec-plugin {}: cannot load it ({}); give the path of a shared library "
                    "built with DURABLE_CODEC_PLUGIN (docs/codec.md)",
                    path, why ? why : "unknown reason"));
  }
  auto make = reinterpret_cast<CodecPluginMake>(dlsym(library, DURABLE_CODEC_PLUGIN_SYMBOL));
  if (!make) {
    throw InvalidArgument(
        fmt::format("--codec-plugin {}: not a codec plugin, it does not define {} "
                    "(DURABLE_CODEC_PLUGIN in durable/codec_plugin.hpp)",
                    path, DURABLE_CODEC_PLUGIN_SYMBOL));
  }
  std::shared_ptr<const PayloadCodec> codec;
  try {
    codec.reset(make(config.c_str()));
  } catch (const std::exception& e) {
    throw InvalidArgument(fmt::format("--codec-plugin {}: its codec refused to start: {}", path, e.what()));
  }
  if (!codec) throw InvalidArgument(fmt::format("--codec-plugin {}: it made no codec (nullptr)", path));
  return codec;
}

}  // namespace durable::cli
