#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>

#include "base/sealer.hpp"

using namespace durable;
using durable::detail::Sealer;

namespace {

// Reverses the bytes behind the key id and a check byte; knows only the keys it is given.
class ReversingCodec : public PayloadCodec {
 public:
  ReversingCodec(std::string write_key, std::vector<std::string> known)
      : write_key_(std::move(write_key)), known_(std::move(known)) {}
  std::string key_id() const override { return write_key_; }
  std::string encode(std::string_view plaintext) const override {
    return std::string(1, static_cast<char>(plaintext.size() & 0xff)) +
           std::string(plaintext.rbegin(), plaintext.rend());
  }
  std::string decode(std::string_view key_id, std::string_view encoded) const override {
    if (std::find(known_.begin(), known_.end(), key_id) == known_.end())
      throw UnknownCodecKey(std::string(key_id), "unknown key");
    if (encoded.empty() || static_cast<unsigned char>(encoded[0]) != ((encoded.size() - 1) & 0xff))
      throw CodecError("check byte wrong");
    return std::string(encoded.rbegin(), encoded.rend() - 1);
  }

 private:
  std::string write_key_;
  std::vector<std::string> known_;
};

Sealer sealer(std::string write_key, std::vector<std::string> known) {
  return Sealer(std::make_shared<ReversingCodec>(std::move(write_key), std::move(known)));
}

}  // namespace

TEST_CASE("base64 and sha256 match their standard test vectors", "[unit][codec]") {
  CHECK(detail::base64_encode("foobar") == "Zm9vYmFy");
  CHECK(detail::base64_encode("fo") == "Zm8=");
  CHECK(detail::base64_decode("Zm9vYg==") == std::optional<std::string>("foob"));
  CHECK_FALSE(detail::base64_decode("Zm9v!").has_value());
  CHECK_FALSE(detail::base64_decode("Zg=a").has_value());
  CHECK(detail::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(detail::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("a sealed value opens to itself, and plaintext opens as it is", "[unit][codec]") {
  const Sealer s = sealer("k1", {"k1"});
  // Plaintext with a '!', which no base64 ciphertext holds: not finding it cannot be luck.
  const Json value = {{"a", 1}, {"b", {"secret!", 2}}};
  const Json sealed = s.seal(value);
  CHECK(sealed.at("$encoded").at("key") == "k1");
  CHECK(sealed.dump().find("secret!") == std::string::npos);
  CHECK(s.open(sealed, "x") == value);
  CHECK(s.open(value, "x") == value);
  CHECK(s.open_text(s.seal_text("an error"), "x") == "an error");
  CHECK(s.seal_text("an error").starts_with("$encoded:k1:"));
  CHECK(s.seal_text("").empty());
  CHECK(s.open_text("plain", "x") == "plain");

  Json data = s.seal_fields({{"input", "in"}, {"error_message", "boom!"}, {"attempts", 2}});
  CHECK(data.at("attempts") == 2);
  CHECK(data.dump().find("boom!") == std::string::npos);
  s.open_fields(data, "x");
  CHECK(data == Json{{"input", "in"}, {"error_message", "boom!"}, {"attempts", 2}});
}

TEST_CASE("an unknown key, a damaged value and a missing codec are typed errors", "[unit][codec]") {
  const Json sealed = sealer("k1", {"k1"}).seal("v");
  CHECK_THROWS_AS(sealer("k2", {"k2"}).open(sealed, "x"), UnknownCodecKey);
  CHECK(sealer("k2", {"k1", "k2"}).open(sealed, "x") == "v");  // rotated: the old key still decodes
  Json damaged = sealed;
  damaged["$encoded"]["data"] = "@@@@";
  CHECK_THROWS_AS(sealer("k1", {"k1"}).open(damaged, "x"), CodecError);
  CHECK_THROWS_WITH(Sealer().open(sealed, "a result"), Catch::Contains("no codec"));
  CHECK_THROWS_AS(sealer("bad key!", {}), InvalidOptions);
}

TEST_CASE("equal inputs have fingerprints that compare equal though they are stored encoded", "[unit][codec]") {
  const Sealer s = sealer("k1", {"k1"});
  const std::string fp = s.fingerprint(Json{{"x", 1}});
  CHECK(fp.starts_with("$encoded:k1:"));
  CHECK(s.same_input(fp, Json{{"x", 1}}));
  CHECK_FALSE(s.same_input(fp, Json{{"x", 2}}));
}
