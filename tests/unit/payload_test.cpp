// Payload limits and conversions without a database: what check_payload refuses, and that a
// conversion failure is always a PayloadError (never a nlohmann_json exception or a bad cast).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "durable/detail/payload.hpp"
#include "support/expect.hpp"

using durable::Json;
using durable::PayloadError;
using durable::detail::check_payload;
using durable::detail::from_payload;
using durable::test::expect_throw;

namespace {
Json nested(int depth) {  // `depth` levels: depth - 1 arrays around a number
  Json j = 1;
  for (int i = 1; i < depth; ++i) j = Json::array({j});
  return j;
}
}  // namespace

TEST_CASE("check_payload refuses what PostgreSQL or JSON cannot carry, naming where", "[payload]") {
  CHECK_NOTHROW(check_payload(Json{{"id", "order-1"}, {"qty", 3}, {"price", 9.5}, {"tags", {"a", "ü"}}}, "p"));
  expect_throw<PayloadError>(
      [] {
        check_payload(Json{{"a", {1, std::nan("")}}}, "the input");
      },
      "the input", "NaN or Infinity", "'/a/1'");
  expect_throw<PayloadError>([] { check_payload(Json{{"note", std::string("x\0y", 3)}}, "p"); }, "NUL", "'/note'");
  expect_throw<PayloadError>([] { check_payload(Json{{std::string("k\0", 2), 1}}, "p"); }, "a key with", "NUL");
  expect_throw<PayloadError>([] { check_payload(Json("caf\xC3"), "p"); }, "invalid UTF-8 at byte 3");
  expect_throw<PayloadError>([] { check_payload(Json("\xED\xA0\x80"), "p"); }, "invalid UTF-8");  // a surrogate
  expect_throw<PayloadError>([] { check_payload(Json("\xC0\xAF"), "p"); }, "invalid UTF-8");      // overlong
  CHECK_NOTHROW(check_payload(nested(durable::max_payload_depth), "p"));
  expect_throw<PayloadError>([] { check_payload(nested(durable::max_payload_depth + 1), "p"); }, "deeper than 256");
  CHECK_NOTHROW(check_payload(Json(std::string(durable::max_payload_bytes - 2, 'x')), "p"));  // with its quotes
  expect_throw<PayloadError>([] { check_payload(Json(std::string(durable::max_payload_bytes - 1, 'x')), "p"); },
                             "the limit is 4194304 bytes");
  // Many small values: measured exactly, not by the quick upper bound.
  CHECK_NOTHROW(check_payload(Json(std::vector<int>(400000, 1234567)), "p"));  // 3.2 MB
  expect_throw<PayloadError>([] { check_payload(Json(std::vector<int>(600000, 1234567)), "p"); }, "4800001 bytes");
}

TEST_CASE("check_payload refuses a payload in the form encoded values are stored in, and only that form",
          "[payload][codec]") {
  expect_throw<PayloadError>(
      [] {
        check_payload(Json{{"$encoded", {{"key", "k1"}, {"data", "AAAA"}}}}, "the input");
      },
      "the input cannot be stored", "only field is \"$encoded\"", "rename the field");
  expect_throw<PayloadError>([] { check_payload(Json{{"$encoded", 1}}, "p"); }, "\"$encoded\"");
  CHECK_NOTHROW(check_payload(Json{{"$encoded", 1}, {"other", 2}}, "p"));  // two fields: not the form
  CHECK_NOTHROW(check_payload(Json{{"inner", {{"$encoded", 1}}}}, "p"));   // only the top level is read so
  CHECK_NOTHROW(check_payload(Json::array({Json{{"$encoded", 1}}}), "p"));
  CHECK_NOTHROW(check_payload(Json("$encoded:k1:AAAA"), "p"));  // a JSON string is stored as JSON
}

TEST_CASE("a top-level integer input must be a whole number in its type's range", "[payload]") {
  CHECK(from_payload<int>(Json(42), "n") == 42);
  CHECK(from_payload<int>(Json(42.0), "n") == 42);
  CHECK(from_payload<std::int64_t>(Json(std::numeric_limits<std::int64_t>::min()), "n") ==
        std::numeric_limits<std::int64_t>::min());
  CHECK(from_payload<std::uint8_t>(Json(255), "n") == 255);
  for (const Json& bad : {Json(1e300), Json(-1e300), Json(4294967296LL), Json(1.5), Json(2147483648.0), Json(-1)}) {
    CAPTURE(bad.dump());
    if (bad == Json(-1)) {
      expect_throw<PayloadError>([&] { from_payload<unsigned>(bad, "n"); }, "whole number in its range");
    } else {
      expect_throw<PayloadError>([&] { from_payload<int>(bad, "the input of workflow 'w'"); },
                                 "the input of workflow 'w'", "whole number in its range");
    }
  }
  expect_throw<PayloadError>([] { from_payload<std::uint8_t>(Json(256), "n"); }, "whole number");
}

TEST_CASE("a failed conversion is a PayloadError even for a payload that cannot be printed", "[payload]") {
  expect_throw<PayloadError>([] { from_payload<int>(Json("\xFF"), "n"); }, "does not convert");
  expect_throw<PayloadError>([] { from_payload<std::vector<int>>(Json{{"k", "\xFF"}}, "n"); }, "does not convert");
}
