#include "base/uuid.hpp"

#include <fmt/format.h>

#include <cctype>
#include <chrono>
#include <random>

namespace durable::detail {

namespace {
// Seeded with 256 bits: one 32-bit seed would give two processes the same sequence (and the
// same claim tokens and uuids) once in about 2^32 starts.
std::mt19937_64 seeded_generator() {
  std::random_device device;
  std::seed_seq seed{device(), device(), device(), device(), device(), device(), device(), device()};
  return std::mt19937_64(seed);
}

std::uint64_t random_bits() {
  thread_local std::mt19937_64 gen = seeded_generator();
  return gen();
}

std::string format_uuid(std::uint64_t hi, std::uint64_t lo) {
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // RFC 4122 variant
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48,
                     lo & 0xffffffffffffULL);
}
}  // namespace

std::string random_uuid() {
  const std::uint64_t hi = (random_bits() & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  return format_uuid(hi, random_bits());
}

std::string random_token() {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const std::uint64_t bits[2] = {random_bits(), random_bits()};
  std::string out(16, ' ');
  for (int i = 0; i < 16; ++i) out[static_cast<std::size_t>(i)] = alphabet[(bits[i / 8] >> (6 * (i % 8))) & 63];
  return out;
}

bool is_uuid(const std::string& text) {
  if (text.size() != 36) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? text[i] != '-' : !std::isxdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

std::string time_ordered_uuid() {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const std::uint64_t hi =
      (static_cast<std::uint64_t>(ms) << 16) | 0x7000ULL | (random_bits() & 0x0fffULL);  // version 7
  return format_uuid(hi, random_bits());
}

}  // namespace durable::detail
