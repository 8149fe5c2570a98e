// A toy keyed payload codec for tests: the codec tests, the CLI's codec plugin and the console's.
#pragma once

#include <cstdint>
#include <durable/codec.hpp>
#include <durable/errors.hpp>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace durable::test {

// A toy keyed codec: the plaintext XORed with a stream from the key's secret, behind an 8-byte tag
// (FNV-1a of the secret and the plaintext) that tells a changed value. Not encryption: a test double.
class XorCodec : public PayloadCodec {
 public:
  XorCodec(std::map<std::string, std::string> secrets, std::string write_key)
      : secrets_(std::move(secrets)), write_key_(std::move(write_key)) {}
  std::string key_id() const override { return write_key_; }
  std::string encode(std::string_view plaintext) const override {
    const std::string& secret = secrets_.at(write_key_);
    return tag(secret, plaintext) + xored(secret, plaintext);
  }
  std::string decode(std::string_view key_id, std::string_view encoded) const override {
    auto it = secrets_.find(std::string(key_id));
    if (it == secrets_.end()) {
      throw UnknownCodecKey(std::string(key_id), "value encoded with key '" + std::string(key_id) +
                                                     "', which the codec does not know: keep old keys in the "
                                                     "codec after a rotation");
    }
    if (encoded.size() < 8) throw CodecError("encoded value too short");
    std::string plaintext = xored(it->second, encoded.substr(8));
    if (tag(it->second, plaintext) != encoded.substr(0, 8)) {
      throw CodecError("value under key '" + std::string(key_id) + "' fails authentication: it was changed");
    }
    return plaintext;
  }

 private:
  static std::string tag(const std::string& secret, std::string_view text) {
    std::uint64_t h = 1469598103934665603ull;
    for (char c : secret + std::string(text)) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((h >> (8 * i)) & 0xff);
    return out;
  }
  static std::string xored(const std::string& secret, std::string_view text) {
    std::string out(text);
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<char>(out[i] ^ secret[i % secret.size()] ^ (i * 31));
    return out;
  }
  std::map<std::string, std::string> secrets_;
  std::string write_key_;
};

}  // namespace durable::test
