// A named queue, and a paused type, as the operator tools (the console and the `durable` CLI) write it in JSON: the
// same fields in both, its pause time in the tool's own form (milliseconds, or ISO-8601).
#pragma once

#include <durable/queue_records.hpp>

namespace durable::console {

Json queue_json(const QueueInfo& queue, Json paused_at);
Json queue_key_json(const QueueKeyInfo& key);
Json paused_type_json(const PausedType& type, Json paused_at);

}  // namespace durable::console
