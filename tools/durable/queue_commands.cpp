// `durable queues`: list and show the named queues (with their busiest keys), define one, pause
// and resume one, audited.
#include <fmt/format.h>

#include <map>
#include <regex>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "console/queue_fields.hpp"
#include "text.hpp"
#include "views.hpp"

namespace durable::cli {
namespace {

std::string limit_text(const std::optional<int>& limit) { return limit ? std::to_string(*limit) : "none"; }

std::string rate_text(const std::optional<RateLimit>& rate) {
  return rate ? fmt::format("{}/{}", rate->count, span(rate->period)) : "none";
}

// A period's count of a unit (ms, s, m, h or d), in milliseconds.
Duration period_of(const std::string& count, const std::string& unit) {
  const long long n = std::stoll(count);
  const long long ms = unit == "ms"  ? n
                       : unit == "s" ? n * 1000
                       : unit == "m" ? n * 60'000
                       : unit == "h" ? n * 3'600'000
                                     : n * 86'400'000;
  return Duration{ms};
}

// "50/1s": 50 admissions a second; the period in ms, s, m, h or d. What the API then checks
// (a count of at least 1, a period up to a year) it refuses with its own message.
RateLimit parse_rate(const std::string& text, const char* option) {
  static const std::regex form(R"((\d{1,9})/(\d{1,9})(ms|s|m|h|d))");
  std::smatch m;
  if (!std::regex_match(text, m, form)) {
    throw InvalidArgument(
        fmt::format("{} '{}' is not a rate: write COUNT/PERIOD, e.g. 50/1s or 1000/1h (units ms, s, "
                    "m, h, d)",
                    option, escaped(text)));
  }
  return {std::stoi(m[1]), period_of(m[2], m[3])};
}

// "30s": a step of priority aging (the API checks it is over 0 and at most a year).
Duration parse_step(const std::string& text, const char* option) {
  static const std::regex form(R"((\d{1,9})(ms|s|m|h|d))");
  std::smatch m;
  if (!std::regex_match(text, m, form)) {
    throw InvalidArgument(
        fmt::format("{} '{}' is not a period: write a count and a unit, e.g. 30s or 5m (units ms, s, m, h, d)", option,
                    escaped(text)));
  }
  return period_of(m[1], m[2]);
}

std::string aging_text(const std::optional<Duration>& step) {
  return step ? fmt::format("+1 priority a {} waited", span(*step)) : "none";
}

// "gold=3": key gold takes three turns a round. The key is what comes before the last '='.
std::pair<std::string, int> parse_weight(const std::string& text) {
  static const std::regex form(R"((.*)=(\d{1,9}))");
  std::smatch m;
  if (!std::regex_match(text, m, form)) {
    throw InvalidArgument(
        fmt::format("--key-weight '{}' is not a weight: write KEY=WEIGHT, e.g. gold=3 (WEIGHT 1 to {})", escaped(text),
                    max_key_weight));
  }
  return {m[1], std::stoi(m[2])};
}

std::string weights_text(const std::map<std::string, int>& weights) {
  if (weights.empty()) return "none";
  std::string text;
  for (const auto& [key, weight] : weights)
    text += fmt::format("{}{}={}", text.empty() ? "" : ", ", escaped(key), weight);
  return text;
}

// The queue's activity attempts running and tasks waiting, as one cell.
std::string activities_text(const QueueInfo& q) {
  return fmt::format("{} running, {} waiting", q.activities_running, q.activities_waiting);
}

void list_queues(Tool& tool) {
  Json all = Json::array();
  Table table({"QUEUE", "CONCURRENCY", "PER KEY", "RATE", "KEY RATE", "PAUSED", "QUEUED", "RUNNING", "THROTTLED",
               "OLDEST QUEUED", "ACTIVITIES"});
  for (const auto& q : tool.engine().queues().list()) {
    all.push_back(to_json(q));
    table.add({q.spec.name, limit_text(q.spec.concurrency), limit_text(q.spec.key_concurrency), rate_text(q.spec.rate),
               rate_text(q.spec.key_rate), q.paused ? "yes" : "no", std::to_string(q.queued), std::to_string(q.running),
               std::to_string(q.throttled), fmt::format("{:.1f}s", q.oldest_queued_seconds), activities_text(q)});
  }
  Json types = Json::array();
  Table paused({"PAUSED TYPE", "NAME", "SINCE", "BY", "REASON"});
  for (const auto& t : tool.engine().queues().paused_types()) {
    types.push_back(console::paused_type_json(t, iso_time(t.paused_at)));
    paused.add({t.kind == TypeKind::workflow ? "workflow" : "activity", escaped(t.name), iso_time(t.paused_at),
                escaped(t.paused_by), shown_text(t.paused_reason)});
  }
  std::string text = all.empty() ? "no named queues\n" : table.str();
  if (!types.empty()) text += "\n" + paused.str();
  tool.print({{"queues", all}, {"paused_types", types}}, text);
}

void show_queue(Tool& tool, const std::string& name, int keys) {
  const QueueInfo q = tool.engine().queues().get(name);
  Json doc = to_json(q);
  doc["keys"] = Json::array();
  Table table({"KEY", "QUEUED", "RUNNING", "OLDEST QUEUED"});
  for (const auto& k : tool.engine().queues().keys(name, keys)) {
    doc["keys"].push_back(to_json(k));
    table.add({k.key.empty() ? "(none)" : escaped(k.key), std::to_string(k.queued), std::to_string(k.running),
               fmt::format("{:.1f}s", k.oldest_queued_seconds)});
  }
  std::string text = fmt::format(
      "queue          {}\nconcurrency    {}\nper key        {}\nrate           {}\nkey rate       {}\npaused         "
      "{}\nqueued         {}\nrunning        {}\nthrottled      {}\noldest queued  {:.1f}s\nactivities     {}\nkey "
      "weights    "
      "{}\npriority aging {}\n",
      q.spec.name, limit_text(q.spec.concurrency), limit_text(q.spec.key_concurrency), rate_text(q.spec.rate),
      rate_text(q.spec.key_rate),
      q.paused ? fmt::format("yes, since {} by {}: {}", iso_time(q.paused_at), escaped(q.paused_by),
                             shown_text(q.paused_reason))
               : "no",
      q.queued, q.running, q.throttled, q.oldest_queued_seconds, activities_text(q), weights_text(q.spec.key_weights),
      aging_text(q.spec.priority_aging));
  if (!doc["keys"].empty()) text += "\n" + table.str();
  tool.print(doc, text);
}

struct QueueArgs {
  std::string name, reason, rate, key_rate, workflow, activity, priority_aging;
  std::vector<std::string> key_weights;
  int concurrency = 0, key_concurrency = 0, keys = 20;
  const CLI::Option* concurrency_given = nullptr;  // a limit left out is none: given, it must be >= 1
  const CLI::Option* key_concurrency_given = nullptr;
};

void define_queue(Tool& tool, const QueueArgs& a) {
  QueueSpec spec{a.name, std::nullopt, std::nullopt};
  if (a.concurrency_given->count() > 0) spec.concurrency = a.concurrency;
  if (a.key_concurrency_given->count() > 0) spec.key_concurrency = a.key_concurrency;
  if (!a.rate.empty()) spec.rate = parse_rate(a.rate, "--rate");
  if (!a.key_rate.empty()) spec.key_rate = parse_rate(a.key_rate, "--key-rate");
  if (!a.priority_aging.empty()) spec.priority_aging = parse_step(a.priority_aging, "--priority-aging");
  for (const auto& text : a.key_weights) {
    const auto [key, weight] = parse_weight(text);
    if (!spec.key_weights.emplace(key, weight).second) {
      throw InvalidArgument(fmt::format("--key-weight gives key '{}' twice: give each key once", escaped(key)));
    }
  }
  tool.engine().queues().define(spec);
  tool.print(
      to_json(tool.engine().queues().get(a.name)),
      fmt::format("queue '{}': concurrency {}, per key {}, rate {}, key rate {}, key weights {}, priority aging {}\n",
                  a.name, limit_text(spec.concurrency), limit_text(spec.key_concurrency), rate_text(spec.rate),
                  rate_text(spec.key_rate), weights_text(spec.key_weights), aging_text(spec.priority_aging)));
}

// Pauses or resumes a workflow or activity type (--workflow, --activity).
void pause_or_resume_type(Tool& tool, const std::string& verb, TypeKind kind, const std::string& name,
                          const OperatorAction& action) {
  Queues& queues = tool.engine().queues();
  const bool workflow = kind == TypeKind::workflow;
  bool changed = true;
  if (verb == "pause") workflow ? queues.pause_workflow(name, action) : queues.pause_activity(name, action);
  if (verb == "resume")
    changed = workflow ? queues.resume_workflow(name, action) : queues.resume_activity(name, action);
  const char* what = workflow ? "workflow" : "activity";
  tool.print({{what, name}, {"action", verb}, {"changed", changed}},
             changed ? fmt::format("{} {} type '{}'\n", verb == "pause" ? "paused" : "resumed", what, escaped(name))
                     : fmt::format("{} type '{}' was not paused\n", what, escaped(name)));
}

void pause_or_resume(Tool& tool, const std::string& verb, const QueueArgs& a) {
  if (!a.name.empty() + !a.workflow.empty() + !a.activity.empty() != 1) {
    throw InvalidArgument(
        fmt::format("queues {}: name one queue, or --workflow NAME, or --activity NAME (one of them)", verb));
  }
  if (a.name.empty()) {
    const OperatorAction action = tool.action(a.reason);
    const bool workflow = !a.workflow.empty();
    return pause_or_resume_type(tool, verb, workflow ? TypeKind::workflow : TypeKind::activity,
                                workflow ? a.workflow : a.activity, action);
  }
  Queues& queues = tool.engine().queues();
  queues.get(a.name);  // UnknownQueue before anything
  const OperatorAction action = tool.action(a.reason);
  if (verb == "pause") queues.pause(a.name, action);
  if (verb == "resume") queues.resume(a.name, action);
  tool.print({{"queue", a.name}, {"action", verb}},
             fmt::format("{} queue '{}'\n", verb == "pause" ? "paused" : "resumed", a.name));
}

}  // namespace

void add_queue_commands(CLI::App& app, Cli& cli) {
  auto* queues =
      app.add_subcommand("queues", "list, read, define, pause and resume named queues")->require_subcommand(1);
  queues->fallthrough();
  auto a = std::make_shared<QueueArgs>();
  auto* qlist = queues->add_subcommand("list", "every named queue, by name, with what it holds now");
  example(qlist, "durable queues list");
  cli.verb(qlist, [&cli] { list_queues(cli.tool); });
  auto* qshow = queues->add_subcommand("show", "one queue and its keys with the most queued runs");
  qshow->add_option("name", a->name, "queue name")->required();
  qshow->add_option("--keys", a->keys, "how many keys to show (1 to 1000)")->capture_default_str();
  example(qshow, "durable queues show tenants --keys 5");
  cli.verb(qshow, [&cli, a] { show_queue(cli.tool, a->name, a->keys); });
  auto* qdefine = queues->add_subcommand("define", "create a queue or change its limits (unset: no limit)");
  qdefine->add_option("name", a->name, "queue name")->required();
  a->concurrency_given =
      qdefine->add_option("--concurrency", a->concurrency, "admitted runs at once, all engines together (unset: none)");
  a->key_concurrency_given = qdefine->add_option("--key-concurrency", a->key_concurrency,
                                                 "admitted runs at once per concurrency key (unset: none)");
  qdefine->add_option("--rate", a->rate, "admissions of the queue a period: COUNT/PERIOD, e.g. 50/1s (unset: none)");
  qdefine->add_option("--key-rate", a->key_rate, "admissions per concurrency key a period, e.g. 5/1m (unset: none)");
  qdefine->add_option("--key-weight", a->key_weights,
                      "KEY=WEIGHT: the key takes WEIGHT turns a round (1 to 100; repeat for more keys; unset: 1)");
  qdefine->add_option("--priority-aging", a->priority_aging,
                      "PERIOD, e.g. 1m: queued work rises one priority a PERIOD waited, up to the highest waiting "
                      "(unset: none)");
  example(qdefine, "durable queues define tenants --concurrency 20 --key-concurrency 2 --rate 50/1s");
  cli.verb(qdefine, [&cli, a] { define_queue(cli.tool, *a); });
  for (const std::string verb : {"pause", "resume"}) {
    auto* sub =
        queues->add_subcommand(verb, verb == "pause" ? "a queue admits and starts nothing more, or a workflow or "
                                                       "activity type is claimed no more (what runs goes on)"
                                                     : "admit, start or claim again, at once");
    sub->add_option("name", a->name, "queue name (or give --workflow or --activity)");
    sub->add_option("--workflow", a->workflow, "a workflow type, on every queue, instead of a queue");
    sub->add_option("--activity", a->activity, "an activity type, on every queue, instead of a queue");
    sub->add_option("--reason", a->reason, "why, for the audit trail")->required();
    example(sub, fmt::format("durable queues {} tenants --reason \"{}\"", verb,
                             verb == "pause" ? "payment provider down" : "provider back"));
    cli.verb(sub, [&cli, a, verb] { pause_or_resume(cli.tool, verb, *a); });
  }
}

}  // namespace durable::cli
