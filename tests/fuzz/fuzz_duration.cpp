// parse_duration on arbitrary text; format_duration and format_seconds on
// what it accepts and on arbitrary values. An invalid text must only yield a
// one-line reason, never a crash or undefined behaviour.
#include <rlock/util/duration.hpp>

#include "fuzz.hpp"
#include <cstdint>
#include <cstring>

using namespace rlock;

namespace {

void
check_accepted(std::string_view text, Duration value) {
  if (value < Duration::zero()) {
    fuzz::finding("parse_duration accepted a negative duration", text);
  }
  // format_seconds keeps whole milliseconds, which parse back exactly.
  const auto shown = format_seconds(value);
  const auto again = parse_duration(shown);
  const auto ms = std::chrono::floor<std::chrono::milliseconds>(value);
  if (!again || again.value() != ms) {
    fuzz::finding("format_seconds does not parse back", shown);
  }
  (void)format_duration(value);
}

} // namespace

extern "C" int
LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = parse_duration(text);
  if (parsed) {
    check_accepted(text, parsed.value());
  } else if (parsed.error().empty() || !fuzz::is_one_line(parsed.error())) {
    fuzz::finding("parse_duration's reason is not one line", parsed.error());
  }
  // The formatters take any value, negative ones included.
  if (size >= sizeof(std::int64_t)) {
    std::int64_t raw = 0;
    std::memcpy(&raw, data, sizeof raw);
    (void)format_duration(Duration(raw));
    (void)format_seconds(Duration(raw));
  }
  return 0;
}
