#include "sodium_codec.hpp"

#include <sodium.h>
#include <durable/errors.hpp>

#include <string>
#include <vector>

namespace durable_sodium {

namespace {

constexpr std::size_t nonce_bytes = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;  // 24
constexpr std::size_t tag_bytes = crypto_aead_xchacha20poly1305_ietf_ABYTES;       // 16
static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == 32);

// sodium_init() once per process, before the first key is used; thread-safe (a static's initializer).
void init_sodium() {
  static const int status = sodium_init();
  if (status < 0) throw durable::Error("SodiumCodec: libsodium could not be initialized (sodium_init failed)");
}

const unsigned char* bytes(std::string_view text) { return reinterpret_cast<const unsigned char*>(text.data()); }

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

bool is_key_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// A key id as it may appear in a message: it comes from the database or a config string.
std::string shown(std::string_view id) {
  std::string out;
  for (char c : id.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return id.size() > 64 ? out + "..." : out;
}

durable::InvalidArgument bad_keys(std::string_view source, const std::string& rule) {
  return durable::InvalidArgument(std::string(source) + ": " + rule +
                                  " (write the keys as \"k2=<64 hex digits>,k1=<64 hex digits>\", the current key "
                                  "first; make a key with `openssl rand -hex 32`)");
}

}  // namespace

SodiumCodec::SodiumCodec(std::string_view keys, std::string_view source) {
  init_sodium();
  if (trimmed(keys).empty()) throw bad_keys(source, "no keys given");
  std::vector<std::string_view> entries;
  for (std::size_t start = 0;;) {
    const std::size_t comma = keys.find(',', start);
    entries.push_back(trimmed(keys.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    // Entries are named by position, never quoted: a malformed one may be key material.
    const std::string entry = "entry " + std::to_string(i + 1) + " of " + std::to_string(entries.size());
    if (entries[i].empty()) throw bad_keys(source, entry + " is empty");
    const std::size_t equals = entries[i].find('=');
    if (equals == std::string_view::npos) throw bad_keys(source, entry + " has no '=' between key id and key");
    const std::string_view id = trimmed(entries[i].substr(0, equals));
    const std::string_view hex = trimmed(entries[i].substr(equals + 1));
    if (!is_key_id(id)) {
      throw bad_keys(source, entry + ": key id '" + shown(id) +
                                 "' is not allowed: use 1 to 64 characters of letters, digits, '_', '.' and '-'");
    }
    const std::string named = "key '" + std::string(id) + "'";
    if (keys_.contains(id)) throw bad_keys(source, "key id '" + std::string(id) + "' is given twice");
    if (hex.size() != 2 * sizeof(Key)) {
      throw bad_keys(source,
                     named + " has " + std::to_string(hex.size()) + " characters, not 64 hex digits (32 bytes)");
    }
    Key key{};
    std::size_t decoded = 0;
    const char* end = nullptr;
    if (sodium_hex2bin(key.data(), key.size(), hex.data(), hex.size(), nullptr, &decoded, &end) != 0 ||
        decoded != key.size()) {
      sodium_memzero(key.data(), key.size());
      throw bad_keys(source, named + " is not hex: use only 0-9, a-f and A-F");
    }
    if (sodium_is_zero(key.data(), key.size())) throw bad_keys(source, named + " is all zeros: use a random key");
    keys_.emplace(id, key);
    sodium_memzero(key.data(), key.size());
    if (i == 0) current_ = id;
  }
}

SodiumCodec::~SodiumCodec() {
  for (auto& [id, key] : keys_) sodium_memzero(key.data(), key.size());
}

std::string SodiumCodec::generate_key_hex() {
  init_sodium();
  Key key{};
  crypto_aead_xchacha20poly1305_ietf_keygen(key.data());
  std::string hex(2 * key.size() + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), key.data(), key.size());
  sodium_memzero(key.data(), key.size());
  hex.pop_back();  // the terminating NUL sodium_bin2hex writes
  return hex;
}

std::string SodiumCodec::encode(std::string_view plaintext) const {
  const Key& key = keys_.find(current_)->second;
  std::string out(nonce_bytes + plaintext.size() + tag_bytes, '\0');
  auto* nonce = reinterpret_cast<unsigned char*>(out.data());
  randombytes_buf(nonce, nonce_bytes);  // random: 192 bits never repeat in practice, so no counter to keep
  unsigned long long written = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(nonce + nonce_bytes, &written, bytes(plaintext), plaintext.size(),
                                             bytes(current_), current_.size(), nullptr, nonce, key.data());
  return out;
}

std::string SodiumCodec::decode(std::string_view key_id, std::string_view encoded) const {
  const auto it = keys_.find(key_id);
  if (it == keys_.end()) {
    std::string known;
    for (const auto& [id, key] : keys_) known += (known.empty() ? "" : ", ") + id;
    throw durable::UnknownCodecKey(
        std::string(key_id),
        "value encoded with key '" + shown(key_id) + "', which this SodiumCodec does not know (it " + "knows " + known +
            "): keep old keys on the ring after a rotation while values " + "encoded under them are stored");
  }
  if (encoded.size() < nonce_bytes + tag_bytes) {
    throw durable::CodecError("value encoded with key '" + shown(key_id) + "' is " + std::to_string(encoded.size()) +
                              " bytes, too short for a SodiumCodec value (nonce and tag are 40): it was changed");
  }
  std::string plaintext(encoded.size() - nonce_bytes - tag_bytes, '\0');
  unsigned long long written = 0;
  const unsigned char* nonce = bytes(encoded);
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(reinterpret_cast<unsigned char*>(plaintext.data()), &written, nullptr,
                                                 nonce + nonce_bytes, encoded.size() - nonce_bytes, bytes(key_id),
                                                 key_id.size(), nonce, it->second.data()) != 0) {
    throw durable::CodecError("value encoded with key '" + shown(key_id) +
                              "' fails authentication: it was changed, or encoded with another key of that id");
  }
  return plaintext;
}

}  // namespace durable_sodium
