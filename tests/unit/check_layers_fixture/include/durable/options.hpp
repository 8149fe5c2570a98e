// A value header with libraries a user of the API does not have.
#pragma once

#include <boost/optional.hpp>  // reported
#include <chrono>
#include <pqxx/pqxx>  // reported
