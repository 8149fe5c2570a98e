// PayloadCodec: encodes (say, encrypts) what durable stores of a user's, so the database holds no plaintext.
#pragma once

#include <string>
#include <string_view>

namespace durable {

// Encodes what durable stores that came from a user: workflow and activity inputs and results,
// heartbeat details, messages, published events and error messages. Each value is stored with
// the key id it was encoded under, so a codec that still knows an old key keeps decoding the
// values written under it after a rotation (new values take key_id()). Set it as
// EngineOptions::codec; it is called from many threads at once, so it must be thread-safe.
//
// What the database still tells: ids, names, topics, event keys, idempotency keys, statuses and
// times stay plaintext (it indexes them), and the size of each value. Whether two stored values
// are equal it tells only if encode() is deterministic; with a random nonce (an authenticated
// cipher, as in the libsodium example) it cannot, and the idempotency check of equal inputs is
// then made by the engine, from a SHA-256 of the plaintext stored encoded beside the result.
class PayloadCodec {
 public:
  virtual ~PayloadCodec() = default;
  // The key new values are encoded with: 1 to 64 characters of [A-Za-z0-9_.-].
  virtual std::string key_id() const = 0;
  // `plaintext` encoded under key_id(); any bytes.
  virtual std::string encode(std::string_view plaintext) const = 0;
  // The plaintext of a value encode() made under `key_id`. Throws durable::UnknownCodecKey when
  // it does not know `key_id`, durable::CodecError when the value fails authentication.
  virtual std::string decode(std::string_view key_id, std::string_view encoded) const = 0;
};

}  // namespace durable
