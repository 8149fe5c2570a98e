// A facade: it may include value headers and other facades, never a src/ header.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/log.hpp"  // reported
#include "durable/detail/payload.hpp"
#include "durable/missing.hpp"  // reported
#include "durable/run_records.hpp"
