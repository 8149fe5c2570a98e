// expect_throw<E>(f, parts...): f throws E and its message contains every part.
#pragma once

#include <catch2/catch.hpp>
#include <string>

namespace durable::test {

template <typename E, typename F, typename... Parts>
void expect_throw(F&& f, const Parts&... parts) {
  try {
    f();
    FAIL("expected an exception, none was thrown");
  } catch (const E& e) {
    const std::string message = e.what();
    for (const std::string& part : {std::string(parts)...}) CHECK_THAT(message, Catch::Contains(part));
  }
}

}  // namespace durable::test
