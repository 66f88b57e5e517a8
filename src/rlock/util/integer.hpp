#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace rlock {

// Returns the decimal integer that is the whole of `text` ("42", "-7"; no
// '+', no white space, nothing after the digits) when it lies within [min,
// max]; nothing for anything else, an empty text or a number out of range.
std::optional<std::int64_t>
parse_integer(std::string_view text,
              std::int64_t min = std::numeric_limits<std::int64_t>::min(),
              std::int64_t max = std::numeric_limits<std::int64_t>::max());

} // namespace rlock
