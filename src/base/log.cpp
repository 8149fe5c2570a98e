#include "base/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace durable::detail {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto existing = spdlog::get("durable");  // the application may have made its own
    if (existing) return existing;
    auto made = spdlog::stderr_color_mt("durable");
    const char* level = std::getenv("DURABLE_LOG_LEVEL");
    made->set_level(level && *level ? spdlog::level::from_str(level) : spdlog::level::warn);
    return made;
  }();
  return *logger;
}

}  // namespace durable::detail
