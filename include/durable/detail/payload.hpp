// What the templates need: JSON conversion of user types, and call-signature traits.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "durable/errors.hpp"

namespace durable {
using Json = nlohmann::json;

// Limits every payload (workflow and activity inputs and results, schedule inputs, event
// payloads) is held to before it is written, so PostgreSQL never refuses one half-way.
inline constexpr std::size_t max_payload_bytes = std::size_t{4} * 1024 * 1024;  // as compact JSON
inline constexpr int max_payload_depth = 256;                                   // nested arrays and objects
}  // namespace durable

namespace durable::detail {

// Converts a payload to JSON; a type nlohmann_json cannot represent fails to compile.
template <typename T>
Json to_payload(const T& value, const char* what) {
  if constexpr (std::is_void_v<T>) {
    return Json();
  } else {
    try {
      return Json(value);
    } catch (const nlohmann::json::exception& e) {
      throw PayloadError(fmt::format("{} does not convert to JSON: {}", what, e.what()));
    }
  }
}

// An object whose single field is this is how an encoded value is stored (docs/codec.md), so no
// payload may be one: it would be read back as encoded.
inline constexpr std::string_view encoded_field = "$encoded";

// Throws PayloadError, naming `what` and the place in the payload, when it is larger than
// max_payload_bytes, nested deeper than max_payload_depth, holds NaN or Infinity (JSON has
// neither), a NUL character (jsonb cannot store it) or invalid UTF-8 in a string, or when it is
// an object whose single field is encoded_field.
void check_payload(const Json& payload, const std::string& what);

// Whether a JSON number is a whole number that integer type T can hold. nlohmann_json casts
// without checking (a float out of range is undefined behaviour), so top-level integers are
// checked here. Integers nested in user types are converted by nlohmann_json as they are.
template <typename T>
bool fits_integer(const Json& json) {
  if (json.is_number_integer()) return std::in_range<T>(json.get<std::int64_t>());
  if (json.is_number_unsigned()) return std::in_range<T>(json.get<std::uint64_t>());
  if (!json.is_number_float()) return true;  // not a number: nlohmann_json reports the type
  const double d = json.get<double>();
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;  // exclusive
  return d >= lo && d < hi && d == std::trunc(d);
}

// Converts JSON back to the declared type, naming what and where on failure.
template <typename T>
T from_payload(const Json& json, const std::string& what) {
  if constexpr (std::is_void_v<T>) {
    return;
  } else {
    // For the message only: never throws (invalid UTF-8 is replaced), and cut short.
    auto shown = [&] { return json.dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 200); };
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (!fits_integer<T>(json)) {
        throw PayloadError(
            fmt::format("{} does not convert to the declared integer type: {} is not a whole number "
                        "in its range",
                        what, shown()));
      }
    }
    try {
      return json.get<T>();
    } catch (const nlohmann::json::exception& e) {
      throw PayloadError(
          fmt::format("{} does not convert to the declared type: {} (payload: {})", what, e.what(), shown()));
    }
  }
}

// Deduces the context, input and result types of `R T::operator()(Ctx&, const In&)`.
template <typename F>
struct call_traits : call_traits<decltype(&F::operator())> {};
template <typename C, typename R, typename Ctx, typename In>
struct call_traits<R (C::*)(Ctx&, In)> {
  using context = Ctx;
  using result = R;
  using input = std::remove_cvref_t<In>;
};
template <typename C, typename R, typename Ctx, typename In>
struct call_traits<R (C::*)(Ctx&, In) const> : call_traits<R (C::*)(Ctx&, In)> {};

template <typename T>
using input_of = typename call_traits<T>::input;
template <typename T>
using result_of = typename call_traits<T>::result;

// A definition type names itself with `static constexpr auto name = "...";`.
template <typename T>
concept Named = requires {
  {std::string(T::name)};
};

// An activity may derive its idempotency key from its input.
template <typename T>
concept HasIdempotencyKey = requires(const input_of<T>& in) {
  { T::idempotency_key(in) } -> std::convertible_to<std::optional<std::string>>;
};

// A definition may declare `static ActivityOptions options()`.
template <typename T>
concept HasOptions = requires {
  {T::options()};
};

}  // namespace durable::detail
