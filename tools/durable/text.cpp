#include "text.hpp"

#include <fmt/format.h>

#include <durable/errors.hpp>
#include <regex>

namespace durable::cli {

std::string iso_time(TimePoint t) {
  const auto ms = std::chrono::floor<std::chrono::milliseconds>(t);
  const auto day = std::chrono::floor<std::chrono::days>(ms);
  const std::chrono::year_month_day ymd{day};
  const std::chrono::hh_mm_ss hms{ms - day};
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), hms.hours().count(),
                     hms.minutes().count(), hms.seconds().count(), hms.subseconds().count());
}

std::string iso_time(const std::optional<TimePoint>& t) { return t ? iso_time(*t) : std::string(); }

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

std::string status_text(const RunSummary& r) {
  return std::string(to_string(r.status)) + (r.blocked ? ", blocked" : "");
}

std::string count_of(std::int64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

namespace {

constexpr std::string_view text_prefix = "$encoded:";

// The key of a codec's envelope, {"$encoded": {"key": K, "data": ...}}; nullopt for other values.
std::optional<std::string> envelope_key(const Json& v) {
  if (!v.is_object() || v.size() != 1 || !v.contains("$encoded")) return std::nullopt;
  const Json& e = v["$encoded"];
  if (!e.is_object() || !e.contains("key") || !e["key"].is_string()) return std::nullopt;
  return e["key"].get<std::string>();
}

std::string marker(const std::string& key) { return fmt::format("[encoded with key {}]", key); }

// `v` with each envelope inside it replaced by its marker, as a string.
Json marked(const Json& v) {
  if (auto key = envelope_key(v)) return marker(*key);
  if (!v.is_structured()) return v;
  Json out = v;
  for (auto& item : out) item = marked(item);
  return out;
}

}  // namespace

std::string shown(const Json& value) {
  if (auto key = envelope_key(value)) return marker(*key);
  return marked(value).dump();
}

std::string escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out += byte < 0x20 || byte == 0x7F ? fmt::format("\\x{:02x}", byte) : std::string(1, c);
  }
  return out;
}

std::string shown_text(const std::string& text) {
  if (!std::string_view(text).starts_with(text_prefix)) return escaped(text);
  const std::size_t colon = text.find(':', text_prefix.size());
  return marker(
      text.substr(text_prefix.size(), colon == std::string::npos ? std::string::npos : colon - text_prefix.size()));
}

std::string span(std::chrono::system_clock::duration d) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  if (ms < 0) return "-" + span(-d);
  if (ms < 60'000) return fmt::format("{:.3f}s", ms / 1000.0);
  const auto s = ms / 1000;
  if (s < 3600) return fmt::format("{}m {}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h {}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d {}h", s / 86400, s % 86400 / 3600);
}

TimePoint parse_time(const std::string& text, const std::string& option, TimePoint now) {
  static const std::regex age(R"((\d{1,9})(s|m|h|d))");
  static const std::regex iso(
      R"((\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?(Z|[+-]\d{2}:?\d{2})?)");
  std::smatch m;
  if (std::regex_match(text, m, age)) {
    const long n = std::stol(m[1]);  // at most 9 digits: n days in seconds fits
    const char unit = m[2].str()[0];
    const long seconds = unit == 's' ? n : unit == 'm' ? n * 60 : unit == 'h' ? n * 3600 : n * 86400;
    const auto since_1970 = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    if (seconds > since_1970) {  // the clock's nanoseconds would overflow not long before
      throw InvalidArgument(fmt::format("{} '{}' reaches before 1970: give an age of at most {}d, or an ISO-8601 time",
                                        option, text, since_1970 / 86400));
    }
    return now - std::chrono::seconds{seconds};
  }
  if (std::regex_match(text, m, iso)) {
    const std::chrono::year_month_day ymd{std::chrono::year{std::stoi(m[1])},
                                          std::chrono::month{static_cast<unsigned>(std::stoi(m[2]))},
                                          std::chrono::day{static_cast<unsigned>(std::stoi(m[3]))}};
    auto field = [&](int i) { return m[i].matched ? std::stoi(m[i]) : 0; };
    const int year = static_cast<int>(ymd.year());  // the clock's nanoseconds reach 2262
    if (ymd.ok() && year >= 1970 && year <= 2200 && field(4) < 24 && field(5) < 60 && field(6) < 60) {
      std::string fraction = m[7].matched ? m[7].str() : "";
      fraction.resize(6, '0');
      TimePoint t = std::chrono::sys_days{ymd} + std::chrono::hours{field(4)} + std::chrono::minutes{field(5)} +
                    std::chrono::seconds{field(6)} + std::chrono::microseconds{std::stol(fraction)};
      const std::string zone = m[8].matched ? m[8].str() : "Z";
      if (zone != "Z") {
        const std::string digits = std::regex_replace(zone.substr(1), std::regex(":"), "");
        const int hours = std::stoi(digits.substr(0, 2)), minutes = std::stoi(digits.substr(2, 2));
        if (hours > 23 || minutes > 59) {
          throw InvalidArgument(fmt::format(
              "{} '{}' has the offset {}, which is not one: give hours 00 to 23 and minutes 00 to 59 (+01:00, "
              "-05:30), or Z for UTC",
              option, text, zone));
        }
        const auto offset = std::chrono::hours{hours} + std::chrono::minutes{minutes};
        t = zone[0] == '+' ? t - offset : t + offset;  // local time minus its offset is UTC
      }
      return t;
    }
  }
  throw InvalidArgument(
      fmt::format("{} '{}' is not a time: use an ISO-8601 date or date and time from 1970 to 2200 (2026-12-01, "
                  "2026-12-01T08:00:00Z, 2026-12-01T09:00+01:00; no zone means UTC) or an age like 90s, 30m, 12h "
                  "or 7d",
                  option, text));
}

void Table::add(std::vector<std::string> row) {
  for (auto& cell : row) cell = escaped(cell);
  rows_.push_back(std::move(row));
}

std::string Table::str() const {
  std::vector<std::size_t> widths;
  for (const auto& row : rows_) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += i + 1 == row.size() ? row[i] : fmt::format("{:<{}}  ", row[i], widths[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

}  // namespace durable::cli
