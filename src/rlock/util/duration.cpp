#include <rlock/util/duration.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

namespace rlock {

namespace {

struct Unit {
  std::string_view suffix;
  std::int64_t nanoseconds;
};

constexpr std::array<Unit, 4> k_units{{
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
}};

constexpr std::int64_t k_max_ns = std::numeric_limits<std::int64_t>::max();

bool
is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Splits "1.5s" into number "1.5" and unit "s"; seconds when there is none.
std::optional<std::int64_t>
unit_of(std::string_view text, std::string_view& number) {
  const auto unit_start = text.find_last_of("0123456789.") + 1;
  const auto suffix = text.substr(unit_start);
  number = text.substr(0, unit_start);
  if (suffix.empty()) {
    return 1'000'000'000;
  }
  for (const auto& unit : k_units) {
    if (suffix == unit.suffix) {
      return unit.nanoseconds;
    }
  }
  return std::nullopt;
}

// Parses "123", "123.456", ".5" or "5." (as strtod and flock(1) read them)
// times `unit` ns into `result`, exactly.
bool
scale_decimal(std::string_view number,
              std::int64_t unit,
              std::int64_t& result) {
  const auto dot = number.find('.');
  const auto whole = number.substr(0, dot);
  const auto fraction = dot == std::string_view::npos ? std::string_view{}
                                                      : number.substr(dot + 1);
  if (whole.empty() && fraction.empty()) {
    return false;
  }
  std::int64_t total = 0;
  for (char c : whole) {
    if (!is_digit(c) || total > (k_max_ns - (c - '0')) / 10) {
      return false;
    }
    total = total * 10 + (c - '0');
  }
  if (total > k_max_ns / unit) {
    return false;
  }
  total *= unit;
  std::int64_t place = unit;
  for (char c : fraction) {
    if (!is_digit(c)) {
      return false;
    }
    place /= 10;
    if (total > k_max_ns - (c - '0') * place) {
      return false;
    }
    total += (c - '0') * place;
  }
  result = total;
  return true;
}

} // namespace

Expected<Duration>
parse_duration(std::string_view text) {
  const auto invalid = Expected<Duration>::failure(
      "invalid duration " + quote(text) + " (use e.g. 500ms, 30s, 5m, 1h)");
  if (text.empty() || !(is_digit(text.front()) || text.front() == '.')) {
    return text.starts_with('-') ? Expected<Duration>::failure(
               "invalid duration " + quote(text) + ": must not be negative")
                                 : invalid;
  }
  std::string_view number;
  const auto unit = unit_of(text, number);
  if (!unit) {
    return invalid;
  }
  std::int64_t nanoseconds = 0;
  if (!scale_decimal(number, *unit, nanoseconds)) {
    const bool all_digits =
        number.find_first_not_of("0123456789.") == std::string_view::npos
        && number.find_first_of("0123456789") != std::string_view::npos
        && number.find('.') == number.rfind('.');
    return all_digits ? Expected<Duration>::failure(
               "invalid duration " + quote(text) + ": too large")
                      : invalid;
  }
  return Duration{nanoseconds};
}

Duration
from_milliseconds(std::int64_t ms) {
  constexpr std::int64_t k_limit = 100LL * 366 * 24 * 3600 * 1000;
  return std::chrono::milliseconds(std::clamp(ms, -k_limit, k_limit));
}

std::string
format_duration(Duration duration) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(duration).count();
  if (ms < 1000) {
    return std::to_string(ms) + "ms";
  }
  if (ms < 60'000) {
    const auto tenths = ms / 100;
    return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10)
           + "s";
  }
  const auto seconds = ms / 1000;
  auto two_digits = [](std::int64_t n) {
    return (n < 10 ? "0" : "") + std::to_string(n);
  };
  if (seconds < 3600) {
    return std::to_string(seconds / 60) + "m" + two_digits(seconds % 60) + "s";
  }
  return std::to_string(seconds / 3600) + "h" + two_digits(seconds / 60 % 60)
         + "m";
}

std::string
format_seconds(Duration duration) {
  const auto ms = to_ms(duration);
  std::string text = std::to_string(ms / 1000);
  auto fraction = std::to_string(1000 + ms % 1000).substr(1);
  while (!fraction.empty() && fraction.back() == '0') {
    fraction.pop_back();
  }
  if (!fraction.empty()) {
    text += "." + fraction;
  }
  return text + "s";
}

} // namespace rlock
