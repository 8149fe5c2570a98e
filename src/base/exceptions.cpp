#include "base/exceptions.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <typeinfo>

#include "durable/errors.hpp"

namespace durable::detail {

namespace {
std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(mangled);
}
}  // namespace

ErrorInfo error_info(const std::exception& e) {
  return {demangle(typeid(e).name()), e.what(), dynamic_cast<const NonRetryableError*>(&e) != nullptr};
}

ErrorInfo current_error() {
  try {
    throw;
  } catch (const NonRetryableError& e) {
    return {demangle(typeid(e).name()), e.what(), true};
  } catch (const std::exception& e) {
    return {demangle(typeid(e).name()), e.what()};
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return {type ? demangle(type->name()) : "unknown", "an exception not derived from std::exception"};
  }
}

}  // namespace durable::detail
