// What a workflow does next, decided from its journal and its code alone: no I/O, no calls into
// the engine, no clock but the one given. The same journal and code decide the same, which is
// what makes a replay safe to repeat anywhere.
#pragma once

#include <spdlog/details/log_msg_buffer.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/registry.hpp"
#include "durable/versioning.hpp"
#include "pg/records.hpp"
#include "replay/child_ids.hpp"
#include "replay/inbox.hpp"
#include "replay/journal.hpp"

namespace durable::detail {

struct Decisions {
  std::vector<pg::NewEvent> events;  // to append to the journal, in order
  std::vector<pg::NewTask> tasks;    // to schedule (none once the run ended); none marked claim
  journal::RunStatus status = journal::RunStatus::running;
  Json result;                                // completed: the workflow's result
  std::string error_type, error_message;      // failed: why
  std::int64_t wake_at_us = -1;               // the earliest timer or receive deadline still to come, -1 for none
  std::vector<std::pair<int, int>> received;  // inbox messages received: [seq, step]
  // Non-empty: the code reached a receive of these topics before their inbox was read. Read it
  // and decide again; these decisions are not to be committed.
  std::set<std::string> wanted_topics;
  Json published = Json::array();  // events set, the latest per key: [key, value, step]
  // Children started; they start even when the run ended with this replay (its parent-close
  // policy then applies to them as to any other).
  std::vector<pg::NewChild> children;
  // Non-empty: the code started children under these ids before they were read. Read them and
  // decide again; these decisions are not to be committed.
  std::set<std::string> wanted_ids;
  std::vector<int> dropped;  // activity steps a cancel delivered by this replay dropped (their tasks go)
  std::string next_run_id;   // continued: the next run's id and input
  Json next_input;
  // What the code logged while not replaying: written once these are committed (write_log_lines).
  std::vector<spdlog::details::log_msg_buffer> log_lines;
  // The code diverged from the journal: nothing of this replay is to be committed but the block
  // (EngineOptions::on_nondeterminism = block). Unset when the run fails instead.
  std::optional<NonDeterminismError> blocked;
  bool complete() const { return wanted_topics.empty() && wanted_ids.empty(); }
  bool ended() const { return status != journal::RunStatus::running; }
};

// Runs the code of `journal.name` from `registry` against the journal, with `now_us` as the
// clock for timers and now(), `inbox` for receives and `ids` for children's starts. A divergence
// from the journal fails the run, or blocks it (Decisions::blocked) under `on_nondeterminism`.
// Throws UnknownWorkflow when the registry does not know it.
Decisions decide(const Registry& registry, const JournalCache& journal, const std::string& workflow_id,
                 std::int64_t now_us, const Inbox& inbox = Inbox::unread(), const ChildIds& ids = ChildIds::unread(),
                 OnNondeterminism on_nondeterminism = OnNondeterminism::fail);

// Writes what a committed replay logged (Decisions::log_lines) to spdlog's default logger.
void write_log_lines(const std::vector<spdlog::details::log_msg_buffer>& lines);

}  // namespace durable::detail
