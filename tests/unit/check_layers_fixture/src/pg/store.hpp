// Storage: the one layer that may include libpqxx.
#pragma once

#include <pqxx/pqxx>
