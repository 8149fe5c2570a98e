// Messages: payloads sent to a running workflow, received by it in send order, each once.
#pragma once

#include <cstddef>
#include <string>

namespace durable {

// A topic names a stream of messages within one run, and an event key one published value:
// 1 to max_topic_bytes bytes, no NUL.
inline constexpr std::size_t max_topic_bytes = 255;
// A message's idempotency key: at most this many bytes, no NUL.
inline constexpr std::size_t max_message_key_bytes = 255;

struct SendOptions {
  // Non-empty: a second send with this key to the same run adds nothing and returns the first
  // message's id (retry a send whose answer was lost without it arriving twice).
  std::string idempotency_key{};
};

}  // namespace durable
