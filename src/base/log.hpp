// durable's own spdlog logger, "durable": warnings and errors only unless asked for more
// ($DURABLE_LOG_LEVEL=trace|debug|info|warn|error|off, or spdlog::get("durable")->set_level()).
// Control bytes in a message show as \xNN (one message, one line), unless the application
// registered a "durable" logger of its own first: that one logs what it is given.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace durable::detail {
spdlog::logger& logger();

// A user's text (an error message, a reason) as a log line may carry it: with a codec set
// (`encoded`), user data stays out of plaintext everywhere, the logs included.
inline std::string loggable(const std::string& text, bool encoded) {
  return encoded ? std::string("(not logged: EngineOptions::codec is set)") : text;
}
}  // namespace durable::detail
