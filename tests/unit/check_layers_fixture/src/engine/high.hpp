// An engine header may include the layers below it.
#pragma once

#include "base/other.hpp"
