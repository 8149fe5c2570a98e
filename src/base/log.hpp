// durable's own spdlog logger, "durable": warnings and errors only unless asked for more
// ($DURABLE_LOG_LEVEL=trace|debug|info|warn|error|off, or spdlog::get("durable")->set_level()).
#pragma once

#include <spdlog/spdlog.h>

namespace durable::detail {
spdlog::logger& logger();
}
