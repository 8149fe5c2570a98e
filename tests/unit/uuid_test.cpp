// Run ids, uuids and claim tokens: their forms, and that they do not repeat.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "base/uuid.hpp"

using namespace durable;

TEST_CASE("uuids and claim tokens have their forms and do not repeat", "[unit][uuid]") {
  std::set<std::string> seen;
  for (int i = 0; i < 10000; ++i) {
    const std::string v4 = detail::random_uuid(), v7 = detail::time_ordered_uuid(), token = detail::random_token();
    CHECK(detail::is_uuid(v4));
    CHECK(v4[14] == '4');
    CHECK(detail::is_uuid(v7));
    CHECK(v7[14] == '7');
    REQUIRE(token.size() == 16);
    CHECK(token.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
          std::string::npos);
    seen.insert(v4);
    seen.insert(v7);
    seen.insert(token);
  }
  CHECK(seen.size() == 30000);
  CHECK_FALSE(detail::is_uuid("not-a-uuid"));
  CHECK_FALSE(detail::is_uuid(detail::random_token()));
}
