// What the templates need.
#pragma once

#include <fmt/format.h>

#include "durable/status.hpp"
