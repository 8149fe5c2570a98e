// The SodiumCodec as a plugin for the `durable` tool (libdurable-sodium-codec.so):
//   durable --codec-plugin ./libdurable-sodium-codec.so --codec-config "k2=<hex>,k1=<hex>" workflows show ID
// The keys come from --codec-config, or else from DURABLE_CODEC_KEYS, as the services read them.
#include <durable/codec_plugin.hpp>
#include <durable/errors.hpp>

#include <cstdlib>

#include "sodium_codec.hpp"

DURABLE_CODEC_PLUGIN(config) {
  if (config != nullptr && *config != '\0') return new durable_sodium::SodiumCodec(config, "--codec-config");
  const char* env = std::getenv("DURABLE_CODEC_KEYS");
  if (env == nullptr || *env == '\0') {
    throw durable::InvalidArgument(
        "libdurable-sodium-codec: no keys: pass --codec-config \"k1=<64 hex digits>\" or set DURABLE_CODEC_KEYS");
  }
  return new durable_sodium::SodiumCodec(env, "DURABLE_CODEC_KEYS");
}
