// Schema-wide operations for the test kit: dropping a schema and moving its clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace durable::pg {

void drop_schema(const std::string& url, const std::string& schema);
// Moves the schema's clock `ms` on, or to `us` since the epoch, and wakes every engine on it,
// since due times moved (the test kit's time skipping).
void advance_clock(const std::string& url, const std::string& schema, std::int64_t ms);
void set_clock(const std::string& url, const std::string& schema, std::int64_t us);

}  // namespace durable::pg
