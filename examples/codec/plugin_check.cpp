// Loads libdurable-sodium-codec.so as the `durable` tool does (dlopen, DURABLE_CODEC_PLUGIN_SYMBOL)
// and checks what the tool relies on across the library boundary: durable's errors caught by
// reference as their own types, bad keys refused, values the services' SodiumCodec wrote decoded,
// tampered values and unknown keys told apart. Exits 0 when every check holds.
//
// Run: build/examples/sodium-codec-plugin-check build/examples/libdurable-sodium-codec.so
#include <dlfcn.h>
#include <fmt/format.h>
#include <durable/codec_plugin.hpp>
#include <durable/errors.hpp>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "sodium_codec.hpp"

static int failures = 0;

static void expect(bool ok, const std::string& what) {
  fmt::print("{} {}\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

// What `body` threw, as the tool catches it: durable::Error by reference; "" when nothing.
template <typename E>
static std::string thrown_as(const std::function<void()>& body) {
  try {
    body();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("another type: ") + e.what();
  }
  return "";
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: {} PATH/libdurable-sodium-codec.so\n", argv[0]);
    return 2;
  }
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    fmt::print(stderr, "dlopen: {}\n", dlerror());
    return 1;
  }
  auto make = reinterpret_cast<durable::CodecPluginMake>(dlsym(plugin, DURABLE_CODEC_PLUGIN_SYMBOL));
  expect(make != nullptr, "the plugin exports " DURABLE_CODEC_PLUGIN_SYMBOL);
  if (make == nullptr) return 1;
  auto codec_of = [&](const char* config) { return std::unique_ptr<durable::PayloadCodec>(make(config)); };

  const std::string k1 = durable_sodium::SodiumCodec::generate_key_hex();
  const std::string k2 = durable_sodium::SodiumCodec::generate_key_hex();

  unsetenv("DURABLE_CODEC_KEYS");
  expect(thrown_as<durable::InvalidArgument>([&] { codec_of(""); }).find("DURABLE_CODEC_KEYS") != std::string::npos,
         "no keys at all: durable::InvalidArgument that says where keys come from");
  const std::string short_key = thrown_as<durable::Error>([&] { codec_of(("k1=" + k1.substr(2)).c_str()); });
  expect(short_key.find("--codec-config: key 'k1' has 62 characters") != std::string::npos &&
             short_key.find(k1.substr(2)) == std::string::npos,
         "a short key: caught as durable::Error, naming the key id and not the key: " + short_key);
  expect(!thrown_as<durable::InvalidArgument>([&] { codec_of(("k1=" + k1 + ",k1=" + k2).c_str()); }).empty(),
         "a key id given twice is refused");
  expect(!thrown_as<durable::InvalidArgument>([&] { codec_of(("k1=zz" + k1.substr(2)).c_str()); }).empty(),
         "a key that is not hex is refused");
  expect(!thrown_as<durable::InvalidArgument>([&] { codec_of(("k 1=" + k1).c_str()); }).empty(),
         "a key id that is not a durable key id is refused");

  // The services' codec, in this program, wrote under k1; the tool's (the plugin) has rotated to k2.
  const durable_sodium::SodiumCodec service("k1=" + k1);
  const std::string written = service.encode("card 4111 1111 1111 1111");
  const auto tool = codec_of(("k2=" + k2 + ", k1=" + k1).c_str());
  expect(tool->key_id() == "k2", "the first key is the current one");
  expect(tool->decode("k1", written) == "card 4111 1111 1111 1111", "the plugin decodes what the service wrote");
  expect(tool->encode("same") != tool->encode("same"), "equal values encode differently (random nonce)");
  expect(tool->decode("k2", tool->encode("")) == "", "an empty value round-trips");

  try {
    (void)tool->decode("k0", written);
    expect(false, "an unknown key id decodes");
  } catch (const durable::UnknownCodecKey& e) {
    expect(e.key_id() == "k0", "an unknown key id: durable::UnknownCodecKey naming it: " + std::string(e.what()));
  }
  std::string tampered = written;
  tampered[30] = static_cast<char>(tampered[30] ^ 1);
  const std::string changed = thrown_as<durable::CodecError>([&] { (void)tool->decode("k1", tampered); });
  expect(changed.find("'k1' fails authentication") != std::string::npos &&
             thrown_as<durable::UnknownCodecKey>([&] { (void)tool->decode("k1", tampered); }).starts_with("another"),
         "a changed byte: durable::CodecError (not UnknownCodecKey) naming the key id: " + changed);
  expect(!thrown_as<durable::CodecError>([&] { (void)tool->decode("k2", written); }).empty(),
         "a value under k1 presented as k2 fails authentication");

  setenv("DURABLE_CODEC_KEYS", ("k1=" + k1).c_str(), 1);
  expect(codec_of("")->decode("k1", written) == "card 4111 1111 1111 1111",
         "without --codec-config the keys come from DURABLE_CODEC_KEYS");
  return failures == 0 ? 0 : 1;
}
