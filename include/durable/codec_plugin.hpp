// A payload codec as a plugin: a shared library the `durable` tool (and the web console it serves)
// loads with --codec-plugin, so operators read decoded values with the codec the services use.
#pragma once

#include "durable/codec.hpp"

// The one function a codec plugin defines, with DURABLE_CODEC_PLUGIN(...) below: a new codec
// (the tool owns it and deletes it), reading its keys from `config` (the tool's --codec-config, ""
// when not given) or from where the services read theirs. Throwing (or returning nullptr) refuses
// to start; the exception's message is shown. The plugin must be built against the same durable
// headers as the tool (it is C++ across the boundary).
#define DURABLE_CODEC_PLUGIN_SYMBOL "durable_codec_plugin_make"

// In one source file of the plugin:
//   DURABLE_CODEC_PLUGIN(config) { return new MyCodec(read_keys(config)); }
#define DURABLE_CODEC_PLUGIN(config) \
  extern "C" __attribute__((visibility("default"))) durable::PayloadCodec* durable_codec_plugin_make(const char* config)

namespace durable {

// The signature of DURABLE_CODEC_PLUGIN_SYMBOL.
using CodecPluginMake = PayloadCodec* (*)(const char* config);

}  // namespace durable
