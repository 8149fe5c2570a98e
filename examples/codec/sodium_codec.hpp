// SodiumCodec: a durable::PayloadCodec that encrypts every stored value with libsodium, under a keyring.
#pragma once

#include <durable/codec.hpp>

#include <array>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace durable_sodium {

// Encrypts with XChaCha20-Poly1305 (libsodium's crypto_aead_xchacha20poly1305_ietf): each value
// is a fresh random 24-byte nonce followed by the ciphertext and its 16-byte tag, so equal
// plaintexts never encode alike, and a changed byte fails authentication. The key id is bound to
// the value as associated data. New values take the current key; every key on the ring decodes.
//
// Thread-safe: the keys are read-only after construction and libsodium's calls are reentrant.
class SodiumCodec : public durable::PayloadCodec {
 public:
  // Keys as "k2=<64 hex digits>,k1=<64 hex digits>": key id, '=', a 32-byte key in hex; the first
  // is current (encodes new values), the others only decode (older keys kept after a rotation).
  // Key ids are durable key ids: 1 to 64 of [A-Za-z0-9_.-]. Spaces around entries are ignored.
  // Throws durable::InvalidArgument naming `source` (where the keys came from) and the rule
  // broken, never the key material.
  explicit SodiumCodec(std::string_view keys, std::string_view source = "SodiumCodec keys");
  ~SodiumCodec() override;  // wipes the keys
  SodiumCodec(const SodiumCodec&) = delete;
  SodiumCodec& operator=(const SodiumCodec&) = delete;

  // A new random key, as 64 hex digits for the keys string.
  static std::string generate_key_hex();

  std::string key_id() const override { return current_; }
  std::string encode(std::string_view plaintext) const override;
  // Throws durable::UnknownCodecKey for a key id not on the ring, durable::CodecError (naming the
  // key id) for a value that is too short or fails authentication.
  std::string decode(std::string_view key_id, std::string_view encoded) const override;

 private:
  using Key = std::array<unsigned char, 32>;
  std::string current_;
  std::map<std::string, Key, std::less<>> keys_;
};

}  // namespace durable_sodium
