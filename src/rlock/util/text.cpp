#include <rlock/util/text.hpp>

#include <cstdio>

namespace rlock {

namespace {

bool
is_utf8_continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

} // namespace

std::string
quote(std::string_view text) {
  return "'" + printable(text) + "'";
}

std::string
printable(std::string_view text) {
  std::string result;
  for (unsigned char c : text) {
    if (c == '\n') {
      result += "\\n";
    } else if (c == '\t') {
      result += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02X", c);
      result += escaped;
    } else {
      result += static_cast<char>(c);
    }
  }
  return result;
}

std::string
shell_join(const std::vector<std::string>& argv) {
  std::string result;
  for (const auto& word : argv) {
    if (!result.empty()) {
      result += ' ';
    }
    const bool plain = !word.empty()
                       && word.find_first_not_of(
                              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                              "VWXYZ0123456789-_./=:,+@%")
                              == std::string::npos;
    if (plain) {
      result += word;
      continue;
    }
    result += '\'';
    for (char c : word) {
      result += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    result += '\'';
  }
  return result;
}

namespace {

// Returns the byte offset where column `column` of `text` starts.
std::size_t
offset_of_column(std::string_view text, std::size_t column) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!is_utf8_continuation(static_cast<unsigned char>(text[i]))) {
      if (seen == column) {
        return i;
      }
      ++seen;
    }
  }
  return text.size();
}

} // namespace

std::string
truncate_middle(std::string_view text, std::size_t width) {
  const std::size_t columns = column_width(text);
  if (columns <= width) {
    return std::string(text);
  }
  if (width <= 3) {
    return std::string(width, '.');
  }
  const std::size_t tail = (width - 3) / 2;
  const std::size_t head = width - 3 - tail;
  return std::string(text.substr(0, offset_of_column(text, head))) + "..."
         + std::string(text.substr(offset_of_column(text, columns - tail)));
}

std::size_t
column_width(std::string_view text) {
  std::size_t width = 0;
  for (unsigned char c : text) {
    width += is_utf8_continuation(c) ? 0 : 1;
  }
  return width;
}

std::string
truncate_columns(std::string_view text, std::size_t width) {
  if (column_width(text) <= width) {
    return std::string(text);
  }
  const std::size_t keep = width > 3 ? width - 3 : 0;
  std::size_t columns = 0;
  std::size_t end = 0;
  while (end < text.size()) {
    if (!is_utf8_continuation(static_cast<unsigned char>(text[end]))) {
      if (columns == keep) {
        break;
      }
      ++columns;
    }
    ++end;
  }
  return std::string(text.substr(0, end)) + std::string(width - keep, '.');
}

} // namespace rlock
