#include <rlock/util/error.hpp>
#include <rlock/util/random.hpp>

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <random>

namespace rlock {

std::string
random_token() {
  std::array<unsigned char, 16> bytes{};
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    const auto n = getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (n < 0 && errno != EINTR) {
      throw_errno("getrandom");
    }
    filled += n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string token;
  for (auto byte : bytes) {
    token += k_hex[byte >> 4];
    token += k_hex[byte & 0xF];
  }
  return token;
}

std::uint64_t
random_below_or_equal(std::uint64_t bound) {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return std::uniform_int_distribution<std::uint64_t>(0, bound)(generator);
}

} // namespace rlock
