// Changing workflow code under runs in flight (docs/versioning.md): what an engine does with a run
// its code no longer replays, and the exported history format replay checks read.
#pragma once

#include <optional>
#include <string>

namespace durable {

// What an engine does when workflow code asks for something else than the run's journal holds.
enum class OnNondeterminism {
  // The run stays running and is marked blocked (RunInfo::blocked) with the error; nothing of the
  // replay is committed. Engines of the same app version try it again at most once per poll
  // interval, backing off; an engine of another app version tries it at once, and so does
  // Runs::resume. Deploying the old code back (or a patched one) finishes it.
  block,
  // The run fails for good with NonDeterminismError (as before versioning existed).
  fail,
};

// Where a replay of workflow code left its journal: the sequence number (the code's call, counted
// from 0), what the journal holds there and what the code asked for.
struct Divergence {
  int step = -1;
  std::string journaled, asked;
  std::string message;  // the full NonDeterminismError message (names the workflow and run)
};

// A run blocked by a non-determinism error (EngineOptions::on_nondeterminism = block).
struct BlockedRun {
  Divergence divergence;
  std::string app_version;  // of the engine that blocked it last
  int times = 0;            // replays that blocked it since it last made progress
};

// The format of exported histories (Runs::export_history): a JSON object
//   {"format": "durable.history", "version": 1, "workflow_id", "run_id", "workflow_name",
//    "status", "app_version", "events": [{"seq", "kind", "step", "name", "at_us", "data"}, ...]}
// Readers refuse other formats and versions with InvalidHistory.
inline constexpr const char* history_format = "durable.history";
inline constexpr int history_format_version = 1;

}  // namespace durable
