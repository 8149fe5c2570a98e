// A value header that includes only values and the standard library.
#pragma once

#include <string_view>
