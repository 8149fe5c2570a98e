// A base header that calls up a layer.
#pragma once

#include "base/other.hpp"
#include "engine/high.hpp"  // reported
