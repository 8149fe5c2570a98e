// libFuzzer target: payload checks (check_payload) and conversions (from_payload).
// Only durable::PayloadError is an expected outcome; any other exception escaping, a sanitizer
// report or a failed FUZZ_ASSERT is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "durable/detail/payload.hpp"
#include "durable/errors.hpp"
#include "fuzz_assert.hpp"

// A user type as workflows declare them. Outside the anonymous namespace: the macro's unused
// to_json would warn there.
namespace durable_fuzz {
struct Order {
  std::string id;
  int quantity = 0;
  std::vector<std::string> tags;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Order, id, quantity, tags)
}  // namespace durable_fuzz

namespace {

using durable::Json;
using durable_fuzz::Order;

// Whether check_payload accepts the payload; it may only ever throw PayloadError.
bool accepted(const Json& j) {
  try {
    durable::detail::check_payload(j, "fuzz payload");
    return true;
  } catch (const durable::PayloadError&) {
    return false;
  }
}

template <typename T>
void convert(const Json& j) {
  try {
    (void)durable::detail::from_payload<T>(j, "fuzz payload");
  } catch (const durable::PayloadError&) {
  }
}

// A float no integer can hold. nlohmann_json converts one nested in a user type to an int by a
// plain cast (undefined behaviour); durable checks only top-level integers, a documented limit
// (docs/configuration.md, payload limits). So nested int conversions skip such payloads.
bool has_huge_float(const Json& j) {
  if (j.is_number_float()) return std::fabs(j.get<double>()) >= 2147483648.0;
  if (j.is_structured()) {
    for (const auto& item : j) {
      if (has_huge_float(item)) return true;
    }
  }
  return false;
}

// What the engine does with an untyped input (Engine::start_or_find, schedules, activity calls):
// check_payload first, then check_input (from_payload), which must fail with PayloadError only.
void as_input(const Json& j) {
  if (!accepted(j)) return;
  convert<std::string>(j);
  convert<int>(j);
  convert<std::map<std::string, double>>(j);
  if (has_huge_float(j)) return;
  convert<std::vector<int>>(j);
  convert<Order>(j);
}

// Reference for a string: jsonb refuses NUL, nlohmann's dump() refuses invalid UTF-8.
bool storable_string(const std::string& s) {
  if (s.find('\0') != std::string::npos) return false;
  try {
    (void)Json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {  // 316: invalid UTF-8
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // (a) The bytes as a JSON document. With allow_exceptions=false a syntax error gives a
  // discarded value instead of an exception. The parser only yields valid UTF-8, but "\u0000"
  // and deep nesting get through.
  const Json parsed = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) as_input(parsed);

  // (b) The raw bytes as a string value and as an object key: check_payload must refuse exactly
  // the strings that cannot be stored (and the reserved field alone), before its own dump() would throw.
  const std::string raw(reinterpret_cast<const char*>(data), size);
  const bool storable = storable_string(raw);
  FUZZ_ASSERT(accepted(Json(raw)) == storable);
  // A one-field object under the reserved field is the stored form of an encoded value: refused.
  FUZZ_ASSERT(accepted(Json::object({{raw, 1}})) == (storable && raw != durable::detail::encoded_field));
  FUZZ_ASSERT(accepted(Json::array({1, Json::object({{"k", raw}})})) == storable);
  as_input(Json(raw));

  // (c) Nesting around the limit: `depth` containers, each an array or a one-key object as the
  // bytes say, the innermost empty. Accepted exactly up to max_payload_depth levels.
  if (size >= 2) {
    const int depth = 1 + (data[0] | (data[1] << 8)) % 400;  // 1..400
    Json nested = Json::array();
    for (int level = 1; level < depth; ++level) {
      nested =
          (data[level % size] & 1) != 0 ? Json::object({{"k", std::move(nested)}}) : Json::array({std::move(nested)});
    }
    FUZZ_ASSERT(accepted(nested) == (depth <= durable::max_payload_depth));
  }
  return 0;
}
