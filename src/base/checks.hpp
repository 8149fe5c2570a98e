// The checks caller-given ids and names pass before anything is written.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "durable/audit.hpp"
#include "durable/queue_records.hpp"
#include "durable/start_options.hpp"

namespace durable::detail {

// `url`, else $DURABLE_DATABASE_URL; throws InvalidArgument naming `field` when both are empty.
std::string database_url_or_env(const std::string& url, const char* field);

// Throws InvalidWorkflowId when the id is empty, over 1000 bytes, or holds NUL or invalid UTF-8.
void check_workflow_id(const std::string& id);

// Throws InvalidArgument naming `what` when `text` holds NUL or invalid UTF-8 (PostgreSQL text
// cannot hold either): a filter or name from a caller, checked before any statement.
void check_text(const std::string& text, const char* what);

// Throws InvalidTopic when the topic is empty, over max_topic_bytes, or holds NUL or invalid UTF-8.
void check_topic(const std::string& topic);
// Throws InvalidTopic when an event key is empty, over max_topic_bytes, or holds NUL or invalid UTF-8.
void check_event_key(const std::string& key);
// Throws InvalidIdempotencyKey when the key is over max_message_key_bytes, or holds NUL or
// invalid UTF-8 (empty means none).
void check_message_key(const std::string& key);

// Throws InvalidOptions when EngineOptions::app_version is over 255 bytes, or holds NUL or
// invalid UTF-8.
void check_app_version(const std::string& app_version);

// Throws InvalidOptions naming `what` (e.g. "ctx.sleep") when `duration` is beyond
// max_timer_duration.
void check_timer_duration(std::chrono::milliseconds duration, const char* what);

// Throws InvalidPatchId when a patch (change) id is empty, over max_patch_id_bytes, or holds NUL
// or invalid UTF-8.
void check_patch_id(const std::string& change_id);

// Throws InvalidArgument when an operator action's reason is blank, or its actor or reason holds NUL
// or invalid UTF-8.
void check_action(const OperatorAction& action);
inline constexpr std::size_t max_patch_id_bytes = 255;

// What is wrong with a topic or key as PostgreSQL text ("is 300 bytes long: ...", "contains a
// NUL byte, ..."), or empty when nothing is.
std::string text_problem(const std::string& text, std::size_t max_bytes);
// True when `name` is 1 to 63 characters of [A-Za-z0-9_.:-].
bool valid_queue_name(const std::string& name);
// Throws InvalidQueue unless `name` is 1 to 63 characters of [A-Za-z0-9_.:-]; `what` says
// where it came from.
void check_queue_name(const std::string& name, const char* what);
// Throws InvalidOptions for a name in EngineOptions::queues that is not a queue name.
void check_served_queues(const std::vector<std::string>& queues);
// EngineOptions::queue_activity_concurrency: named queues, each bound at least 1 (InvalidOptions).
void check_engine_queue_limits(const std::map<std::string, int>& limits);
// Throws InvalidQueue for a bad name, the default queue, or a limit below 1.
void check_queue_spec(const QueueSpec& spec);
// The queue a start goes to ("default" for none); throws InvalidQueue for a bad queue name, a
// concurrency key over max_concurrency_key_bytes or not UTF-8, and a key or priority given for
// the default queue (which has neither).
std::string queue_of_start(const StartOptions& options);

}  // namespace durable::detail
