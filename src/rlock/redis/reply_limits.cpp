#include <rlock/redis/protocol_error.hpp>
#include <rlock/redis/reply_limits.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <utility>

namespace rlock::redis {

namespace {

// Enough of a line for any length header; the rest is only counted.
constexpr std::size_t k_kept_line = 32;

// Types whose header gives the length of the bytes that follow (with RESP3's
// verbatim string and blob error, which hiredis 1.x reads).
bool
is_bulk(char type) {
  return type == '$' || type == '=' || type == '!';
}

// Types whose header counts the elements that follow (a RESP3 map counts
// pairs).
bool
is_aggregate(char type) {
  return type == '*' || type == '~' || type == '>' || type == '%';
}

// Returns the length in a header such as "$12" or "*-1"; a number too large
// for int64 comes back as its maximum. Nothing when it is not a plain
// decimal number: hiredis 1.x refuses that, and 0.14 reads some of it its
// own way (a sign, a digit it does not know: -1).
std::optional<std::int64_t>
length_in(std::string_view digits) {
  std::int64_t length = 0;
  const auto* end = digits.data() + digits.size();
  const auto [stop, error] = std::from_chars(digits.data(), end, length);
  if (stop != end || digits.empty()) {
    return std::nullopt;
  }
  if (error == std::errc::result_out_of_range) {
    return digits.starts_with('-') ? -1
                                   : std::numeric_limits<std::int64_t>::max();
  }
  return error == std::errc() ? std::optional(length) : std::nullopt;
}

} // namespace

void
ReplyLimits::check(std::string_view bytes) {
  throw_if_failed();
  while (!bytes.empty()) {
    if (m_skip > 0) {
      const auto skipped =
          std::min(m_skip, static_cast<std::int64_t>(bytes.size()));
      bytes.remove_prefix(static_cast<std::size_t>(skipped));
      m_skip -= skipped;
      if (m_skip == 0) {
        end_item();
      }
      continue;
    }
    // A line ends at CRLF, as hiredis reads it; a lone LF is part of it.
    const auto newline = bytes.find('\n');
    const auto part = bytes.substr(
        0, newline == std::string_view::npos ? newline : newline + 1);
    const bool ended =
        newline != std::string_view::npos
        && (newline > 0 ? bytes[newline - 1] == '\r' : m_after_cr);
    m_after_cr = part.ends_with('\r');
    m_line_length += static_cast<std::int64_t>(part.size());
    if (m_line_length > k_max_length) {
      fail(true,
           "a line of more than " + std::to_string(k_max_length) + " bytes");
    }
    m_line +=
        part.substr(0, k_kept_line - std::min(k_kept_line, m_line.size()));
    bytes.remove_prefix(part.size());
    if (ended) {
      end_line();
    }
  }
}

void
ReplyLimits::throw_if_failed() const {
  if (m_failure.empty()) {
    return;
  }
  if (m_too_large) {
    throw ReplyTooLarge(m_failure);
  }
  throw ProtocolError(m_failure);
}

void
ReplyLimits::fail(bool too_large, const std::string& why) {
  m_too_large = too_large;
  m_failure = why;
  if (too_large) {
    throw ReplyTooLarge(why);
  }
  throw ProtocolError(why);
}

void
ReplyLimits::end_line() {
  std::string line = std::exchange(m_line, {});
  const bool whole =
      std::exchange(m_line_length, 0) == static_cast<std::int64_t>(line.size());
  if (whole) {
    line.resize(line.size() - 2); // CRLF
  }
  const char type = line.empty() ? '\0' : line[0];
  if (!is_bulk(type) && !is_aggregate(type)) {
    end_item();
    return;
  }
  // Parsed exactly as hiredis does or refused: reading a length other than
  // hiredis's would lose track of where the next header starts.
  const auto length =
      whole ? length_in(std::string_view(line).substr(1)) : std::nullopt;
  if (!length) {
    fail(false, "bad length in " + quote(line) + (whole ? "" : "..."));
  }
  if (is_bulk(type)) {
    if (*length > k_max_length) {
      fail(true,
           "a string of " + line.substr(1) + " bytes (at most "
               + std::to_string(k_max_length) + ")");
    }
    if (*length < 0) {
      end_item();
    } else {
      m_skip = *length + 2;
    }
    return;
  }
  start_aggregate(line, *length);
}

void
ReplyLimits::start_aggregate(const std::string& header, std::int64_t count) {
  if (m_open.size() >= k_max_depth) {
    fail(true,
         "arrays nested more than " + std::to_string(k_max_depth) + " deep");
  }
  if (count <= 0) {
    end_item(); // nil or empty: complete already
    return;
  }
  const bool map = header[0] == '%';
  const std::int64_t room = k_max_elements - m_elements;
  if (count > (map ? room / 2 : room)) {
    fail(true,
         std::string(map ? "a map of " : "an array of ") + header.substr(1)
             + (map ? " pairs" : " elements") + " (at most "
             + std::to_string(k_max_elements) + " elements in one reply)");
  }
  const std::int64_t elements = map ? 2 * count : count;
  m_elements += elements;
  m_open.push_back(elements);
}

void
ReplyLimits::end_item() {
  while (!m_open.empty()) {
    if (--m_open.back() > 0) {
      return;
    }
    m_open.pop_back(); // that array is complete: an item of its parent
  }
  m_elements = 0; // a whole reply has passed
}

} // namespace rlock::redis
