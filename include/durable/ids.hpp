// WorkflowId and RunId: the two ids of a run, as two types. Both are text, so as plain strings one
// passed where the other is meant (runs.get(handle.id())) compiled and failed at run time; now it
// does not compile. A WorkflowId is the name a caller gives a run (any text converts to one); a
// RunId is the id the engine generated for one run, made from text only explicitly:
// durable::RunId{text}. Both convert to JSON as a plain string, print as their text, and hash.
#pragma once

#include <fmt/core.h>

#include <compare>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace durable {

namespace detail {

// What the two id types share: their text, printing and JSON. The base is one type per id type, so
// a WorkflowId and a RunId never compare with each other.
template <typename Id>
class StringId {
 public:
  const std::string& str() const noexcept { return value_; }
  bool empty() const noexcept { return value_.empty(); }

  friend bool operator==(const StringId&, const StringId&) = default;
  friend std::strong_ordering operator<=>(const StringId&, const StringId&) = default;
  friend std::ostream& operator<<(std::ostream& out, const Id& id) { return out << id.value_; }
  // nlohmann_json finds these by ADL: an id is a JSON string in inputs, results and messages.
  template <typename BasicJson>
  friend void to_json(BasicJson& json, const Id& id) {
    json = id.value_;
  }
  template <typename BasicJson>
  friend void from_json(const BasicJson& json, Id& id) {
    id.value_ = json.template get<std::string>();
  }

 protected:
  StringId() = default;
  explicit StringId(std::string value) noexcept : value_(std::move(value)) {}

 private:
  std::string value_;
};

template <typename Id>
struct StringIdHash {
  std::size_t operator()(const Id& id) const noexcept { return std::hash<std::string>{}(id.str()); }
};

}  // namespace detail

// The id a caller gives a workflow ("order-42"): a start under a taken id starts nothing (as
// StartOptions::id_reuse judges), and Engine::workflow(id) finds its latest run. Any text converts
// to one, so engine.start_workflow<W>("order-42", in) reads as it did.
class WorkflowId : public detail::StringId<WorkflowId> {
 public:
  WorkflowId() = default;
  // Implicit on purpose: text is a workflow id wherever one is asked for.
  WorkflowId(std::string value) noexcept : StringId(std::move(value)) {}
  WorkflowId(std::string_view value) : StringId(std::string(value)) {}
  WorkflowId(const char* value) : StringId(std::string(value)) {}
  friend bool operator==(const WorkflowId&, const WorkflowId&) = default;
  friend std::strong_ordering operator<=>(const WorkflowId&, const WorkflowId&) = default;
};

// The id the engine generated for one run of a workflow id (a start, a fork, a continue-as-new each
// make a new one). Made from text only explicitly, as a tool does with an id a user typed.
class RunId : public detail::StringId<RunId> {
 public:
  RunId() = default;
  explicit RunId(std::string value) noexcept : StringId(std::move(value)) {}
  friend bool operator==(const RunId&, const RunId&) = default;
  friend std::strong_ordering operator<=>(const RunId&, const RunId&) = default;
};

}  // namespace durable

template <>
struct std::hash<durable::WorkflowId> : durable::detail::StringIdHash<durable::WorkflowId> {};
template <>
struct std::hash<durable::RunId> : durable::detail::StringIdHash<durable::RunId> {};

// fmt and spdlog print an id as its text.
template <typename Id>
requires std::is_same_v<Id, durable::WorkflowId> || std::is_same_v<Id, durable::RunId>
struct fmt::formatter<Id> : fmt::formatter<std::string_view> {
  auto format(const Id& id, fmt::format_context& context) const {
    return fmt::formatter<std::string_view>::format(id.str(), context);
  }
};
