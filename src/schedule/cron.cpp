#include "durable/cron.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "durable/errors.hpp"

namespace durable {

namespace {

constexpr std::string_view five_fields = "minute hour day-of-month month day-of-week";
constexpr std::string_view shorthand_list = "@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly";

// What one field accepts. Names, when a field has them, stand for first_name_value, +1, ...
struct FieldSpec {
  std::string_view name;
  unsigned min;
  unsigned max;
  std::string_view names_hint;  // how the names read in a hint, e.g. "JAN-DEC"; empty: no names
  std::span<const std::string_view> names;
  unsigned first_name_value;
};

constexpr std::array<std::string_view, 12> month_names = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                                          "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 7> weekday_names = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

// In the order the fields are written. Day-of-week allows 7 so that `7` and `5-7` work; it is
// folded onto 0 (Sunday) after parsing.
const std::array<FieldSpec, 5> field_specs = {{
    {"minute", 0, 59, "", {}, 0},
    {"hour", 0, 23, "", {}, 0},
    {"day-of-month", 1, 31, "", {}, 0},
    {"month", 1, 12, "JAN-DEC", month_names, 1},
    {"day-of-week", 0, 7, "SUN-SAT", weekday_names, 0},
}};

// Days each month can have, counting February 29 (it is real in leap years).
constexpr std::array<unsigned, 13> max_days_in_month = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

struct Shorthand {
  std::string_view name;
  std::string_view expansion;
};
constexpr std::array<Shorthand, 7> shorthands = {{
    {"@hourly", "0 * * * *"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@weekly", "0 0 * * 0"},
    {"@monthly", "0 0 1 * *"},
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
}};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool equals_ignore_case(std::string_view a, std::string_view b) { return to_lower(a) == to_lower(b); }

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

std::string trim(const std::string& s) {
  std::size_t begin = 0;
  std::size_t end = s.size();
  while (begin < end && is_space(s[begin])) ++begin;
  while (end > begin && is_space(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

std::vector<std::string_view> split_whitespace(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const std::size_t begin = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > begin) out.push_back(s.substr(begin, i - begin));
  }
  return out;
}

[[noreturn]] void fail(std::string_view expression, const std::string& detail) {
  throw InvalidCronExpression(fmt::format("cron expression '{}': {}", expression, detail));
}

// Parses one field into a bit mask (bit v = value v allowed). One instance per field, so every
// error can quote the expression, the field's name and its text.
class FieldParser {
 public:
  FieldParser(std::string_view expression, const FieldSpec& spec, std::string_view text)
      : expression_(expression), spec_(spec), text_(text) {}

  std::uint64_t parse() const {
    std::uint64_t mask = 0;
    std::size_t begin = 0;
    while (true) {
      const std::size_t comma = text_.find(',', begin);
      const std::string_view item = text_.substr(begin, comma == std::string_view::npos ? comma : comma - begin);
      if (item.empty()) reject("a list has an empty item: remove the extra comma (e.g. '1,2' instead of '1,,2')");
      mask |= parse_item(item);
      if (comma == std::string_view::npos) return mask;
      begin = comma + 1;
    }
  }

 private:
  [[noreturn]] void reject(const std::string& rule) const {
    fail(expression_, fmt::format("{} field '{}': {}", spec_.name, text_, rule));
  }

  std::string allowed() const {
    if (spec_.names_hint.empty()) return fmt::format("{}-{}", spec_.min, spec_.max);
    return fmt::format("{}-{} or {}", spec_.min, spec_.max, spec_.names_hint);
  }

  // `*`, `N`, `A-B`, each optionally followed by `/S`; `A/S` runs from A to the field's max.
  std::uint64_t parse_item(std::string_view item) const {
    const std::size_t slash = item.find('/');
    const std::string_view base = item.substr(0, slash);
    const bool has_step = slash != std::string_view::npos;
    const unsigned step = has_step ? parse_step(item.substr(slash + 1)) : 1;

    unsigned low = spec_.min;
    unsigned high = spec_.max;
    if (base != "*") {
      const std::size_t dash = base.find('-');
      if (dash == std::string_view::npos) {
        low = parse_value(base);
        high = has_step ? spec_.max : low;
      } else {
        low = parse_value(base.substr(0, dash));
        high = parse_value(base.substr(dash + 1));
        if (low > high) {
          reject(fmt::format("the range '{}' runs backwards: write the smaller value first (e.g. '{}-{}')", base,
                             base.substr(dash + 1), base.substr(0, dash)));
        }
      }
    }
    std::uint64_t mask = 0;
    for (unsigned v = low; v <= high; v += step) mask |= std::uint64_t{1} << v;
    return mask;
  }

  unsigned parse_step(std::string_view text) const {
    if (!all_digits(text)) reject(fmt::format("the step '{}' is not a number: write e.g. '*/5'", text));
    unsigned step = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), step);
    if (ec != std::errc{} || step > spec_.max) {
      reject(fmt::format("the step {} is larger than the field's range {}-{}", text, spec_.min, spec_.max));
    }
    if (step == 0) reject("a step must be at least 1 (e.g. '*/5')");
    return step;
  }

  unsigned parse_value(std::string_view text) const {
    if (text.empty()) reject(fmt::format("a value is missing: use {}", allowed()));
    if (all_digits(text)) {
      unsigned value = 0;
      const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc{} || value < spec_.min || value > spec_.max) {
        reject(fmt::format("{} is out of range {}-{}", text, spec_.min, spec_.max));
      }
      return value;
    }
    for (std::size_t i = 0; i < spec_.names.size(); ++i) {
      if (equals_ignore_case(text, spec_.names[i])) return spec_.first_name_value + static_cast<unsigned>(i);
    }
    if (spec_.names_hint.empty()) reject(fmt::format("'{}' is not a number: use {}", text, allowed()));
    reject(fmt::format("'{}' is not a number or a {} name: use {}", text, spec_.name, allowed()));
  }

  std::string_view expression_;
  const FieldSpec& spec_;
  std::string_view text_;
};

// Whether some allowed month has some allowed day of the month (Feb 29 counts).
bool some_date_exists(const CronExpression::Fields& f) {
  for (unsigned month = 1; month <= 12; ++month) {
    if (!f.months.test(month)) continue;
    for (unsigned day = 1; day <= max_days_in_month[month]; ++day) {
      if (f.days_of_month.test(day)) return true;
    }
  }
  return false;
}

}  // namespace

CronExpression CronExpression::parse(const std::string& given) {
  std::string text = trim(given);
  if (text.empty()) {
    fail(text, fmt::format("the expression is empty: write 5 fields ({}) or a shorthand such as @daily", five_fields));
  }

  // A shorthand is parsed as its expansion; text() still returns what was given.
  std::string_view to_parse = text;
  if (text.front() == '@') {
    const std::string lowered = to_lower(text);
    const Shorthand* found = nullptr;
    for (const Shorthand& s : shorthands) {
      if (s.name == lowered) found = &s;
    }
    if (found == nullptr) fail(text, fmt::format("unknown shorthand: use one of {}", shorthand_list));
    to_parse = found->expansion;
  }

  const std::vector<std::string_view> parts = split_whitespace(to_parse);
  if (parts.size() != field_specs.size()) {
    fail(text, fmt::format("found {} field{}, expected 5: {} (or a shorthand such as @daily)", parts.size(),
                           parts.size() == 1 ? "" : "s", five_fields));
  }

  std::array<std::uint64_t, 5> masks{};
  for (std::size_t i = 0; i < field_specs.size(); ++i) masks[i] = FieldParser(text, field_specs[i], parts[i]).parse();

  Fields fields;
  fields.minutes = std::bitset<60>(masks[0]);
  fields.hours = std::bitset<24>(masks[1]);
  fields.days_of_month = std::bitset<32>(masks[2]);
  fields.months = std::bitset<13>(masks[3]);
  // Weekday 7 is Sunday again: fold bit 7 onto bit 0.
  fields.days_of_week = std::bitset<7>(masks[4] | (masks[4] >> 7));
  fields.any_day_of_month = parts[2].front() == '*';
  fields.any_day_of_week = parts[4].front() == '*';

  // With day-of-week `*`, a day fires only if its day-of-month and month allow it, so at least one
  // allowed (month, day) pair must be a real date. Otherwise the weekday alone lets days through.
  if (fields.any_day_of_week && !some_date_exists(fields)) {
    fail(text, fmt::format("day-of-month field '{}' and month field '{}' never meet on a real date, so the "
                           "expression never fires: pick days that exist in those months (February has at "
                           "most 29, April, June, September and November 30)",
                           parts[2], parts[3]));
  }
  return CronExpression(std::move(text), fields);
}

bool CronExpression::matches_day(unsigned month, unsigned day, unsigned weekday) const {
  if (!fields_.months.test(month)) return false;
  const bool day_of_month = fields_.days_of_month.test(day);
  const bool day_of_week = fields_.days_of_week.test(weekday);
  // Classic cron: two restricted day fields widen each other; a `*` field leaves the other to decide.
  if (!fields_.any_day_of_month && !fields_.any_day_of_week) return day_of_month || day_of_week;
  return day_of_month && day_of_week;
}

}  // namespace durable
