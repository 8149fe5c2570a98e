#include "base/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

#include "base/printable.hpp"

namespace durable::detail {

namespace {

// Each message is one line: control bytes in the values it holds (ids, reasons, error texts from
// callers and from the database) show as \xNN, so that no value can end the line or forge another.
class EscapingLogger : public spdlog::logger {
 public:
  using spdlog::logger::logger;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    const std::string escaped = printable(payload, std::string_view::npos);
    if (escaped.size() == payload.size()) return spdlog::logger::sink_it_(msg);
    spdlog::details::log_msg copy = msg;
    copy.payload = escaped;
    spdlog::logger::sink_it_(copy);
  }
};

}  // namespace

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto existing = spdlog::get("durable");  // the application may have made its own
    if (existing) return existing;
    auto made = std::make_shared<EscapingLogger>("durable", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    const char* level = std::getenv("DURABLE_LOG_LEVEL");
    made->set_level(level && *level ? spdlog::level::from_str(level) : spdlog::level::warn);
    spdlog::register_logger(made);
    return std::static_pointer_cast<spdlog::logger>(made);
  }();
  return *logger;
}

}  // namespace durable::detail
