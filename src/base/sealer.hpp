// The stored form of user payloads under an EngineOptions::codec: what the store writes and reads.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "durable/codec.hpp"
#include "durable/detail/payload.hpp"

namespace durable::detail {

// A JSON value is stored as {"$encoded": {"key": "<key id>", "data": "<base64>"}} (JSON columns
// stay JSON), a text value (error messages) as "$encoded:<key id>:<base64>". A value without that
// form is plaintext, written before the codec was set, and read as it is. Without a codec every
// value is written as plaintext, and a stored encoded one fails to read (CodecError).
class Sealer {
 public:
  Sealer() = default;
  // `shown_as_stored`: without a codec, encoded values read as they are stored (the envelope, or
  // the "$encoded:" text), for the operator's views; else reading one throws CodecError.
  explicit Sealer(std::shared_ptr<const PayloadCodec> codec, bool shown_as_stored = false);
  bool on() const { return codec_ != nullptr; }

  Json seal(const Json& plaintext) const;
  // seal(plaintext).dump(), without a copy when the codec is off.
  std::string sealed_dump(const Json& plaintext) const { return codec_ ? seal(plaintext).dump() : plaintext.dump(); }
  std::string seal_text(const std::string& plaintext) const;
  // A JSON text (heartbeat details); empty stays empty.
  std::string seal_json_text(const std::string& json_text) const;

  // Journal event data as stored: the fields that hold what came from a user (input, result, value,
  // payload: JSON; error_message, reason: text) encoded. Read back by open_fields.
  Json seal_fields(const Json& data) const;

  // `stored` decoded when it is encoded, else itself. `what` names it in errors.
  Json open(Json stored, const char* what) const;
  std::string open_text(std::string stored, const char* what) const;
  // The fields seal_fields encodes, each decoded in place when it is encoded.
  void open_fields(Json& data, const char* what) const;

  // What tells equal activity inputs apart for the idempotency check when the codec is on (the
  // database sees only encoded inputs): the input's SHA-256, itself encoded, so the database
  // learns nothing of equal inputs. Compared in the engine by same_input.
  std::string fingerprint(const Json& input) const;
  // Whether a stored fingerprint (by fingerprint()) is that of `input`.
  bool same_input(const std::string& stored, const Json& input) const;

 private:
  std::string decode(const std::string& key, const std::string& data64, const char* what) const;
  std::shared_ptr<const PayloadCodec> codec_;
  bool shown_as_stored_ = false;
  std::string key_;  // the codec's key_id(), read once
};

std::string base64_encode(std::string_view bytes);
// nullopt: not base64.
std::optional<std::string> base64_decode(std::string_view text);
std::string sha256_hex(std::string_view bytes);

}  // namespace durable::detail
