// A value header that includes a facade.
#pragma once

#include "durable/engine.hpp"  // reported
#include "durable/status.hpp"
