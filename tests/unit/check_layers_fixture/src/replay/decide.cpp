// A replay source that reaches libpqxx through a storage header (and includes that layer, too).
#include "pg/store.hpp"  // reported twice
