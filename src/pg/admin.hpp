// Schema-wide operations for the test kit: dropping a schema and moving its clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace durable::pg {

void drop_schema(const std::string& url, const std::string& schema);
// Sets the schema's clock skew to `skew_sql` (an expression over $1, a bigint) and wakes every
// engine on it, since due times moved.
void set_clock_skew(const std::string& url, const std::string& schema, const std::string& skew_sql, std::int64_t arg);

}  // namespace durable::pg
