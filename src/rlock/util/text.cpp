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
  std::string result = "'";
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
  return result + "'";
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
