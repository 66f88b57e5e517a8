#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::redis {

// Watches the headers of the replies a server sends, before hiredis reads
// them, and refuses a reply that announces more than rlock ever needs.
// hiredis 0.14 allocates an array as soon as it reads its count
// ("*1700000000" asks for 13.6 GB) and buffers a bulk string or a line of
// any length, so one broken or hostile server could take all memory.
class ReplyLimits {
public:
  // At most this many elements in one reply, summed over nested arrays.
  static constexpr std::int64_t k_max_elements = std::int64_t{1} << 20;
  // At most this many bytes in one bulk string or line.
  static constexpr std::int64_t k_max_length = std::int64_t{64} << 20;
  // At most this many arrays, one inside the other, as hiredis 0.14 reads
  // them (1.x reads any depth, which ReplyReader's copy and hiredis's free
  // would recurse through).
  static constexpr std::size_t k_max_depth = 8;

  // Follows `bytes`, the next ones the server sent. Throws ReplyTooLarge
  // when a reply exceeds a limit, and ProtocolError on a length that is not
  // a number; every later call throws the same again.
  void check(std::string_view bytes);

private:
  void end_line();
  void start_aggregate(const std::string& header, std::int64_t count);
  void end_item();
  void throw_if_failed() const;
  [[noreturn]] void fail(bool too_large, const std::string& why);

  std::string m_line;               // the current line, cut short
  std::int64_t m_line_length = 0;   // its length so far
  bool m_after_cr = false;          // its last byte was CR
  std::int64_t m_skip = 0;          // bulk bytes (and CRLF) still to come
  std::vector<std::int64_t> m_open; // elements still due, per open array
  std::int64_t m_elements = 0;      // announced in the current reply
  std::string m_failure;            // why the stream was refused, if it was
  bool m_too_large = false;
};

} // namespace rlock::redis
