// durable's own spdlog logger, "durable": warnings and errors only unless asked for more
// ($DURABLE_LOG_LEVEL=trace|debug|info|warn|error|off, or spdlog::get("durable")->set_level()).
// Control bytes in a message show as \xNN (one message, one line), unless the application
// registered a "durable" logger of its own first: that one logs what it is given.
#pragma once

#include <spdlog/spdlog.h>

namespace durable::detail {
spdlog::logger& logger();
}
