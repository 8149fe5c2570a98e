#include "base/sealer.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <regex>

#include "base/printable.hpp"
#include "durable/errors.hpp"

namespace durable::detail {

namespace {

constexpr std::string_view text_prefix = "$encoded:";
constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void check_key_id(const std::string& key) {
  static const std::regex allowed("[A-Za-z0-9_.-]{1,64}");
  if (!std::regex_match(key, allowed)) {
    throw InvalidOptions(fmt::format(
        "EngineOptions::codec: key_id() '{}' is not allowed: use 1 to 64 characters of letters, digits, '_', '.' "
        "and '-' (it is stored with every value the codec encodes)",
        printable(key)));
  }
}

// The envelope's key and data when `stored` is one.
bool is_envelope(const Json& stored) {
  return stored.is_object() && stored.size() == 1 && stored.begin().key() == encoded_field;
}

}  // namespace

Sealer::Sealer(std::shared_ptr<const PayloadCodec> codec, bool shown_as_stored)
    : codec_(std::move(codec)), shown_as_stored_(shown_as_stored) {
  if (codec_) {
    key_ = codec_->key_id();
    check_key_id(key_);
  }
}

Json Sealer::seal(const Json& plaintext) const {
  if (!codec_) return plaintext;
  return Json{{encoded_field, {{"key", key_}, {"data", base64_encode(codec_->encode(plaintext.dump()))}}}};
}

std::string Sealer::seal_text(const std::string& plaintext) const {
  if (!codec_ || plaintext.empty()) return plaintext;  // empty: "no error message", as the columns store it
  return fmt::format("{}{}:{}", text_prefix, key_, base64_encode(codec_->encode(plaintext)));
}

std::string Sealer::seal_json_text(const std::string& json_text) const {
  if (!codec_ || json_text.empty()) return json_text;
  return seal(Json::parse(json_text)).dump();
}

std::string Sealer::decode(const std::string& key, const std::string& data64, const char* what) const {
  if (!codec_) {  // no key at all: an engine with the codec may read it
    throw UnknownCodecKey(
        key,
        fmt::format(
            "{} was stored encoded with key '{}', but the engine has no codec: set EngineOptions::codec to one that "
            "knows key '{}'",
            what, printable(key), printable(key)));
  }
  auto bytes = base64_decode(data64);
  if (!bytes) {
    throw CodecError(
        fmt::format("{} encoded with key '{}' is damaged: its data is not base64 (was the stored "
                    "value changed outside durable?)",
                    what, printable(key)));
  }
  try {
    return codec_->decode(key, *bytes);
  } catch (const CodecError&) {
    throw;
  } catch (const std::exception& e) {
    throw CodecError(fmt::format("{} encoded with key '{}' does not decode: {}", what, printable(key), e.what()));
  }
}

// The fields of journal event data that hold what came from a user.
constexpr const char* json_fields[] = {"input", "result", "value", "payload"};
constexpr const char* text_fields[] = {"error_message", "reason"};

Json Sealer::seal_fields(const Json& data) const {
  if (!codec_ || !data.is_object()) return data;
  Json out = data;
  for (const char* field : json_fields) {
    auto it = out.find(field);
    if (it != out.end() && !is_envelope(*it)) *it = seal(*it);
  }
  for (const char* field : text_fields) {
    auto it = out.find(field);
    if (it != out.end() && it->is_string()) *it = seal_text(it->get<std::string>());
  }
  return out;
}

Json Sealer::open(Json stored, const char* what) const {
  if (!is_envelope(stored) || (!codec_ && shown_as_stored_)) return stored;
  const Json& e = stored.begin().value();
  if (!e.is_object() || !e.contains("key") || !e["key"].is_string() || !e.contains("data") || !e["data"].is_string()) {
    throw CodecError(
        fmt::format("{} is an encoded value without a key and data: was it changed outside durable?", what));
  }
  const std::string plaintext = decode(e["key"].get<std::string>(), e["data"].get<std::string>(), what);
  try {
    return Json::parse(plaintext);
  } catch (const Json::exception&) {
    throw CodecError(
        fmt::format("{} decoded with key '{}' is not JSON: the codec decodes it otherwise than it "
                    "encoded it",
                    what, printable(e["key"].get<std::string>())));
  }
}

std::string Sealer::open_text(std::string stored, const char* what) const {
  if (!std::string_view(stored).starts_with(text_prefix) || (!codec_ && shown_as_stored_)) return stored;
  const std::size_t colon = stored.find(':', text_prefix.size());
  if (colon == std::string::npos) {
    throw CodecError(fmt::format("{} is an encoded text without a key: was it changed outside durable?", what));
  }
  return decode(stored.substr(text_prefix.size(), colon - text_prefix.size()), stored.substr(colon + 1), what);
}

void Sealer::open_fields(Json& data, const char* what) const {
  // Only the fields seal_fields writes: a JSON string of a user's that starts like an encoded text
  // is a value, not an encoded one.
  if (!data.is_object()) return;
  for (const char* field : json_fields) {
    auto it = data.find(field);
    if (it != data.end() && is_envelope(*it)) *it = open(std::move(*it), what);
  }
  for (const char* field : text_fields) {
    auto it = data.find(field);
    if (it != data.end() && it->is_string()) *it = open_text(it->get<std::string>(), what);
  }
}

std::string Sealer::fingerprint(const Json& input) const { return seal_text("sha256:" + sha256_hex(input.dump())); }

bool Sealer::same_input(const std::string& stored, const Json& input) const {
  return open_text(stored, "an idempotent result's input fingerprint") == "sha256:" + sha256_hex(input.dump());
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const std::uint32_t v =
        (std::uint8_t(bytes[i]) << 16) | (std::uint8_t(bytes[i + 1]) << 8) | std::uint8_t(bytes[i + 2]);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const std::uint32_t v = std::uint8_t(bytes[i]) << 16;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const std::uint32_t v = (std::uint8_t(bytes[i]) << 16) | (std::uint8_t(bytes[i + 1]) << 8);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t v = 0;
  int bits = 0;
  std::size_t padding = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '=') {
      if (i + 2 < text.size()) return std::nullopt;  // only the last two may be padding
      ++padding;
      continue;
    }
    if (padding > 0) return std::nullopt;
    const std::size_t d = alphabet.find(c);
    if (d == std::string_view::npos) return std::nullopt;
    v = (v << 6) | static_cast<std::uint32_t>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  static constexpr std::array<std::uint32_t, 64> k = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
  std::array<std::uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  auto rotr = [](std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); };
  std::string msg(bytes);
  const std::uint64_t bit_length = static_cast<std::uint64_t>(bytes.size()) * 8;
  msg += static_cast<char>(0x80);
  while (msg.size() % 64 != 56) msg += '\0';
  for (int i = 7; i >= 0; --i) msg += static_cast<char>((bit_length >> (i * 8)) & 0xff);
  for (std::size_t chunk = 0; chunk < msg.size(); chunk += 64) {
    std::array<std::uint32_t, 64> w{};
    for (int i = 0; i < 16; ++i) {
      const auto* p = reinterpret_cast<const unsigned char*>(msg.data() + chunk + 4 * i);
      w[i] = (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
    }
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    auto [a, b, c, d, e, f, g, hh] = h;
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const std::uint32_t ch = (e & f) ^ (~e & g);
      const std::uint32_t t1 = hh + s1 + ch + k[i] + w[i];
      const std::uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      const std::uint32_t t2 = s0 + maj;
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
  }
  std::string out;
  for (std::uint32_t x : h) out += fmt::format("{:08x}", x);
  return out;
}

}  // namespace durable::detail
