// expect_throw<E>(f, parts...): f throws E and its message contains every part; returns what it threw.
#pragma once

#include <catch2/catch.hpp>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace durable::test {

template <typename E, typename F, typename... Parts>
E expect_throw(F&& f, const Parts&... parts) {
  try {
    f();
  } catch (const E& e) {
    const std::string message = e.what();
    for (const std::string& part : std::initializer_list<std::string>{std::string(parts)...})
      CHECK_THAT(message, Catch::Contains(part));
    return e;
  }
  FAIL("expected an exception, none was thrown");
  throw std::logic_error("unreachable");  // FAIL ends the test case
}

}  // namespace durable::test
