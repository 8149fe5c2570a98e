// Text for people and scripts: times printed and parsed, table cells, and aligned tables.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <durable/runs.hpp>

namespace durable::cli {

// "2026-12-02T20:31:05.123Z": UTC, milliseconds.
std::string iso_time(TimePoint t);
std::string iso_time(const std::optional<TimePoint>& t);  // "" when none
// "1.250s", "3m 20s", "2h 5m", "3d 4h": how long, for tables.
std::string span(std::chrono::system_clock::duration d);

// A time an operator types: an ISO-8601 date or date and time ("2026-12-01", "2026-12-01T08:00",
// "2026-12-01T08:00:00Z", "...+01:00"; no zone: UTC), or an age before `now` ("30m", "12h", "7d").
// Throws InvalidArgument naming `option` and the forms it takes.
TimePoint parse_time(const std::string& text, const std::string& option, TimePoint now);

// `text` for a terminal: each control byte (newline, escape, ...) as \xNN, so that no id, reason
// or message can break a line of the output, forge one, or send the terminal a command.
std::string escaped(const std::string& text);

// A stored value for people: as JSON, except what a payload codec encoded and the tool could not
// decode (no --codec-plugin), shown as "[encoded with key K]" instead of its ciphertext.
std::string shown(const Json& value);
std::string shown_text(const std::string& text);  // an error message or reason ("$encoded:K:..."), escaped

// "-" for an empty cell.
std::string or_dash(const std::string& s);
// "running", or "running, blocked".
std::string status_text(const RunSummary& r);
// "1 event", "3 events".
std::string count_of(std::int64_t n, const char* one, const char* many);

// Columns padded to their widest cell, two spaces apart; the last column is not padded. Cells are
// escaped().
class Table {
 public:
  explicit Table(std::vector<std::string> headers) { rows_.push_back(std::move(headers)); }
  void add(std::vector<std::string> row);
  std::string str() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace durable::cli
