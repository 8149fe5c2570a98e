// UUIDs: random (version 4) for WorkflowContext::uuid() and tokens; time-ordered (version 7) for
// run ids, which key the runs, journal and tasks: new keys land at the right end of those indexes
// instead of on random pages (fewer page splits and first-write page images in the WAL).
#pragma once

#include <string>

namespace durable::detail {
std::string random_uuid();
std::string time_ordered_uuid();
// 96 random bits as 16 characters (letters, digits, '-', '_'): a claim token, which every step
// writes to its rows, in less than half a uuid's 36.
std::string random_token();
// Whether `text` is a uuid in its 36-character text form (run ids are).
bool is_uuid(const std::string& text);
}  // namespace durable::detail
