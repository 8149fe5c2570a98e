# Debian ships libpqxx 6.4 with only a pkg-config file; wrap it in an imported target. libpq comes
# with it: durable calls it directly for what libpqxx does not offer (parsing a conninfo string).
find_package(PkgConfig REQUIRED)
pkg_check_modules(PC_LIBPQXX QUIET IMPORTED_TARGET libpqxx libpq)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Libpqxx REQUIRED_VARS PC_LIBPQXX_FOUND VERSION_VAR PC_LIBPQXX_VERSION)
if(Libpqxx_FOUND AND NOT TARGET Libpqxx::Libpqxx)
  add_library(Libpqxx::Libpqxx ALIAS PkgConfig::PC_LIBPQXX)
endif()
