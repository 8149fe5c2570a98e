#include "secrets.hpp"

#include <cstdint>
#include <random>

namespace durable::console::detail {

std::string random_token() {
  std::random_device device;
  std::string out;
  for (int i = 0; i < 8; ++i) {
    const std::uint32_t word = device();
    for (int shift = 0; shift < 32; shift += 4) out += "0123456789abcdef"[(word >> shift) & 0xf];
  }
  return out;
}

bool same_secret(std::string_view given, std::string_view secret) {
  std::size_t diff = given.size() ^ secret.size();
  for (std::size_t i = 0; i < given.size(); ++i) {
    const auto expected = secret.empty() ? 0u : static_cast<unsigned char>(secret[i % secret.size()]);
    diff |= static_cast<unsigned char>(given[i]) ^ expected;
  }
  return diff == 0;
}

std::string bearer(const httplib::Request& req) {
  const std::string value = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  return value.rfind(prefix, 0) == 0 ? value.substr(prefix.size()) : std::string{};
}

}  // namespace durable::console::detail
