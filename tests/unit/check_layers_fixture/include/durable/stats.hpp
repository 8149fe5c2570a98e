// A value header that reaches a facade through another value header.
#pragma once

#include "durable/run_records.hpp"  // reported
