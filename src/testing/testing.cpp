#include "durable/testing.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/uuid.hpp"
#include "pg/admin.hpp"
#include "pg/database.hpp"

namespace durable::testing {

std::string unique_schema(const std::string& prefix) {
  std::string id = detail::random_uuid();
  id.erase(std::remove(id.begin(), id.end(), '-'), id.end());
  std::string name = prefix + "_" + id.substr(0, 16);
  pg::validate_schema_name(name);
  return name;
}

void drop_schema(const std::string& url, const std::string& schema) { pg::drop_schema(url, schema); }

void advance_clock(const std::string& url, const std::string& schema, Duration by) {
  pg::advance_clock(url, schema, by.count());
}

void set_clock(const std::string& url, const std::string& schema, std::chrono::system_clock::time_point to) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(to.time_since_epoch()).count();
  pg::set_clock(url, schema, us);
}

}  // namespace durable::testing
