#pragma once

#include <rlock/util/text.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace rlock::fuzz {

// Reports a broken invariant as a crash, so that libFuzzer saves the input.
[[noreturn]] inline void
finding(std::string_view what, std::string_view detail = {}) {
  const auto shown = quote(detail);
  std::fprintf(stderr,
               "rlock fuzz finding: %.*s: %s\n",
               static_cast<int>(what.size()),
               what.data(),
               shown.c_str());
  std::abort();
}

// Returns true when `text` holds no line break: rlock's messages are one line.
inline bool
is_one_line(std::string_view text) {
  return text.find_first_of("\r\n") == std::string_view::npos;
}

} // namespace rlock::fuzz
