// The console's secrets: made, compared in constant time, and read from a request.
#pragma once

#include <httplib.h>  // cpp-httplib (Debian: libcpp-httplib-dev)

#include <string>
#include <string_view>

namespace durable::console::detail {

// 32 random bytes, hex: std::random_device reads the kernel's generator on Linux.
std::string random_token();

// Compares secrets in a time that depends only on the length of `given` (the caller's own): not
// on where they differ, nor on the secret's length.
bool same_secret(std::string_view given, std::string_view secret);

// The token of an "Authorization: Bearer <token>" header; empty without one.
std::string bearer(const httplib::Request& req);

}  // namespace durable::console::detail
