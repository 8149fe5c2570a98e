// Loading a payload codec plugin (durable/codec_plugin.hpp), so the tool reads what engines
// with a codec stored.
#pragma once

#include <durable/codec.hpp>
#include <memory>
#include <string>

namespace durable::cli {

// The codec the shared library at `path` makes from `config`. Throws InvalidArgument naming the
// file and what is wrong: not loadable, not a plugin, or its codec refused to start.
std::shared_ptr<const PayloadCodec> load_codec_plugin(const std::string& path, const std::string& config);

}  // namespace durable::cli
