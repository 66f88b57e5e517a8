#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rlock {

// Returns `text` in single quotes, with control characters escaped (\n, \t,
// \xNN) so that a message quoting user input stays on one line.
std::string quote(std::string_view text);

// Returns `text` with control characters escaped as quote() does, without
// the quotes: for showing commands and names on one terminal line.
std::string printable(std::string_view text);

// Returns the argv joined by spaces, each word shell-quoted where needed.
std::string shell_join(const std::vector<std::string>& argv);

// Returns `text` cut to at most `width` columns (UTF-8 aware), ending with
// "..." when cut.
std::string truncate_columns(std::string_view text, std::size_t width);

// Returns `text` cut to at most `width` columns by replacing its middle with
// "...", so that both ends stay readable.
std::string truncate_middle(std::string_view text, std::size_t width);

// Returns the number of terminal columns `text` takes (one per code point).
std::size_t column_width(std::string_view text);

} // namespace rlock
