#include "base/checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include "base/printable.hpp"
#include "durable/detail/payload.hpp"
#include "durable/errors.hpp"
#include "durable/messages.hpp"
#include "durable/options.hpp"

namespace durable::detail {

std::string text_problem(const std::string& text, std::size_t max_bytes) {
  if (text.size() > max_bytes) return fmt::format("is {} bytes long: the limit is {} bytes", text.size(), max_bytes);
  if (text.find('\0') != std::string::npos) return "contains a NUL byte, which PostgreSQL text cannot store";
  try {
    (void)Json(text).dump();  // throws on invalid UTF-8
  } catch (const nlohmann::json::exception&) {
    return "is not valid UTF-8";
  }
  return {};
}

std::string database_url_or_env(const std::string& url, const char* field) {
  if (!url.empty()) return url;
  if (const char* env = std::getenv("DURABLE_DATABASE_URL"); env && *env) return env;
  throw InvalidArgument(
      fmt::format("{} is empty and DURABLE_DATABASE_URL is not set: pass a libpq URI or conninfo string, e.g. "
                  "\"postgresql://user@localhost/app\"",
                  field));
}

void check_workflow_id(const std::string& id) {
  if (id.empty())
    throw InvalidWorkflowId("workflow id is empty: give each run a stable, meaningful id (e.g. \"order-42\")");
  if (id.size() > 1000) {
    throw InvalidWorkflowId(fmt::format("workflow id is {} bytes long: the limit is 1000 bytes", id.size()));
  }
  if (id.find('\0') != std::string::npos) {
    throw InvalidWorkflowId("workflow id contains a NUL byte, which PostgreSQL text cannot store: remove it");
  }
  if (auto problem = text_problem(id, 1000); !problem.empty()) {
    throw InvalidWorkflowId(fmt::format("workflow id '{}' {}: ids are UTF-8 text", printable(id, 60), problem));
  }
}

void check_text(const std::string& text, const char* what) {
  if (auto problem = text_problem(text, std::string::npos); !problem.empty()) {
    throw InvalidArgument(fmt::format("{} '{}' {}: it must be UTF-8 text", what, printable(text, 60), problem));
  }
}

void check_topic(const std::string& topic) {
  if (topic.empty()) throw InvalidTopic("message topic is empty: name what the message is about (e.g. \"approval\")");
  if (auto problem = text_problem(topic, max_topic_bytes); !problem.empty()) {
    throw InvalidTopic(fmt::format("message topic '{}' {}", printable(topic, 60), problem));
  }
}

void check_event_key(const std::string& key) {
  if (key.empty()) throw InvalidTopic("event key is empty: name what the event tells (e.g. \"progress\")");
  if (auto problem = text_problem(key, max_topic_bytes); !problem.empty()) {
    throw InvalidTopic(fmt::format("event key '{}' {}", printable(key, 60), problem));
  }
}

void check_message_key(const std::string& key) {
  if (auto problem = text_problem(key, max_message_key_bytes); !problem.empty()) {
    throw InvalidIdempotencyKey(fmt::format("message idempotency key '{}' {}", printable(key, 60), problem));
  }
}

void check_app_version(const std::string& app_version) {
  if (auto problem = text_problem(app_version, 255); !problem.empty()) {
    throw InvalidOptions(
        fmt::format("EngineOptions::app_version '{}' {}: name the build with a release tag or a git "
                    "hash",
                    printable(app_version, 60), problem));
  }
}

void check_timer_duration(std::chrono::milliseconds duration, const char* what) {
  if (duration <= max_timer_duration) return;
  throw InvalidOptions(fmt::format(
      "{}: {}ms is beyond the longest timer, max_timer_duration = {}ms (100 years): wait less, or receive without a "
      "timeout to wait for good",
      what, duration.count(), max_timer_duration.count()));
}

void check_patch_id(const std::string& change_id) {
  if (change_id.empty()) {
    throw InvalidPatchId("patch id is empty: name the change (e.g. \"charge-before-reserve\") and keep the name");
  }
  if (auto problem = text_problem(change_id, max_patch_id_bytes); !problem.empty()) {
    throw InvalidPatchId(fmt::format("patch id '{}' {}", printable(change_id, 60), problem));
  }
}

void check_action(const OperatorAction& action) {
  const bool blank = action.reason.find_first_not_of(" \t\r\n") == std::string::npos;
  if (blank) {
    throw InvalidArgument("an operator action needs a reason: say why (it goes to the audit trail with who and when)");
  }
  if (action.reason.find('\0') != std::string::npos || action.actor.find('\0') != std::string::npos) {
    throw InvalidArgument("an operator action's actor and reason cannot contain NUL bytes");
  }
  check_text(action.actor, "the operator action's actor");
  check_text(action.reason, "the operator action's reason");
}

bool valid_queue_name(const std::string& name) {
  return !name.empty() && name.size() <= 63 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' || c == '-';
  });
}

void check_queue_name(const std::string& name, const char* what) {
  if (!valid_queue_name(name)) {
    throw InvalidQueue(fmt::format("{} '{}' is not a queue name: use 1 to 63 characters of [A-Za-z0-9_.:-]", what,
                                   printable(name, 60)));
  }
}

void check_served_queues(const std::vector<std::string>& queues) {
  for (const auto& name : queues) {
    try {
      check_queue_name(name, "EngineOptions::queues: the entry");
    } catch (const InvalidQueue& e) {
      throw InvalidOptions(e.what());
    }
  }
}

void check_engine_queue_limits(const std::map<std::string, int>& limits) {
  for (const auto& [name, limit] : limits) {
    try {
      check_queue_name(name, "EngineOptions::queue_activity_concurrency: the queue");
    } catch (const InvalidQueue& e) {
      throw InvalidOptions(e.what());
    }
    if (name == default_queue) {
      throw InvalidOptions(
          "EngineOptions::queue_activity_concurrency: the default queue has no bound of its own: this engine runs at "
          "most activity_max_concurrency attempts of all queues together");
    }
    if (limit < 1) {
      throw InvalidOptions(fmt::format(
          "EngineOptions::queue_activity_concurrency['{}'] = {} is invalid: it must be at least 1 (pause the queue to "
          "stop its attempts)",
          name, limit));
    }
  }
}

void check_queue_spec(const QueueSpec& spec) {
  constexpr Duration max_rate_period = std::chrono::hours{24 * 366};
  check_queue_name(spec.name, "QueueSpec::name");
  if (spec.name == default_queue) {
    throw InvalidQueue(
        "the default queue has no limits: define a named queue (say \"tenants\") and start the runs to limit on it "
        "with StartOptions::queue");
  }
  auto check_limit = [&](const std::optional<int>& limit, const char* field) {
    if (limit && *limit < 1) {
      throw InvalidQueue(fmt::format("queue '{}': QueueSpec::{} is {}: a limit is at least 1 (leave it unset for none)",
                                     spec.name, field, *limit));
    }
  };
  check_limit(spec.concurrency, "concurrency");
  check_limit(spec.key_concurrency, "key_concurrency");
  auto check_rate = [&](const std::optional<RateLimit>& rate, const char* field) {
    if (!rate) return;
    if (rate->count < 1) {
      throw InvalidQueue(fmt::format("queue '{}': QueueSpec::{}.count is {}: a rate admits at least 1 run a period",
                                     spec.name, field, rate->count));
    }
    if (rate->period <= Duration{0} || rate->period > max_rate_period) {
      throw InvalidQueue(
          fmt::format("queue '{}': QueueSpec::{}.period is {}ms: give a period over 0 and at most a year", spec.name,
                      field, rate->period.count()));
    }
  };
  check_rate(spec.rate, "rate");
  check_rate(spec.key_rate, "key_rate");
  if (spec.priority_aging && (*spec.priority_aging <= Duration{0} || *spec.priority_aging > max_rate_period)) {
    throw InvalidQueue(
        fmt::format("queue '{}': QueueSpec::priority_aging is {}ms: give a step over 0 and at most a year (leave it "
                    "unset for none)",
                    spec.name, spec.priority_aging->count()));
  }
  for (const auto& [key, weight] : spec.key_weights) {
    if (auto problem = text_problem(key, max_concurrency_key_bytes); !problem.empty()) {
      throw InvalidQueue(
          fmt::format("queue '{}': QueueSpec::key_weights: the key '{}' {}", spec.name, printable(key, 60), problem));
    }
    if (weight < 1 || weight > max_key_weight) {
      throw InvalidQueue(fmt::format(
          "queue '{}': QueueSpec::key_weights['{}'] is {}: a weight is 1 to {} (turns in each round where a key "
          "without one has one)",
          spec.name, printable(key, 60), weight, max_key_weight));
    }
  }
}

std::string queue_of_start(const StartOptions& options) {
  std::string queue = options.queue.empty() ? std::string(default_queue) : options.queue;
  check_queue_name(queue, "StartOptions::queue");
  if (auto problem = text_problem(options.concurrency_key, max_concurrency_key_bytes); !problem.empty()) {
    throw InvalidQueue(
        fmt::format("StartOptions::concurrency_key '{}' {}", printable(options.concurrency_key, 60), problem));
  }
  for (const auto& [key, field] :
       {std::pair{&options.deduplication_key, "deduplication_key"}, std::pair{&options.debounce_key, "debounce_key"}}) {
    if (auto problem = text_problem(*key, max_concurrency_key_bytes); !problem.empty()) {
      throw InvalidQueue(fmt::format("StartOptions::{} '{}' {}", field, printable(*key, 60), problem));
    }
  }
  if (options.debounce_key.empty() != (options.debounce == Duration{0})) {
    throw InvalidQueue(
        "StartOptions::debounce_key and debounce go together: give a key and a time over 0 to debounce, or neither");
  }
  if (options.debounce < Duration{0} || options.debounce > std::chrono::hours{24 * 366}) {
    throw InvalidQueue(
        fmt::format("StartOptions::debounce is {}ms: give a time over 0 and at most a year", options.debounce.count()));
  }
  if (queue == default_queue && !options.debounce_key.empty()) {
    throw InvalidQueue(
        "StartOptions::debounce_key applies on a named queue only (the default queue runs every run at once): set "
        "StartOptions::queue to a defined queue");
  }
  if (queue == default_queue && (!options.concurrency_key.empty() || options.priority != 0)) {
    throw InvalidQueue(
        "StartOptions::concurrency_key and priority apply on a named queue only (the default queue admits every run at "
        "once): set StartOptions::queue to a queue defined with limits");
  }
  return queue;
}

}  // namespace durable::detail
