// The one public header that may include libpqxx.
#pragma once

#include <pqxx/pqxx>

#include "durable/engine.hpp"
