#include <rlock/util/integer.hpp>

#include <charconv>

namespace rlock {

std::optional<std::int64_t>
parse_integer(std::string_view text, std::int64_t min, std::int64_t max) {
  std::int64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min
      || value > max) {
    return std::nullopt;
  }
  return value;
}

} // namespace rlock
