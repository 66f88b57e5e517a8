#pragma once

#include <rlock/redis/protocol_error.hpp>
#include <rlock/redis/reply.hpp>
#include <rlock/redis/reply_limits.hpp>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct redisReader;

namespace rlock::redis {

// Turns the bytes a server sent into replies (RESP2, through hiredis's
// parser; its API is the same in hiredis 0.14 and 1.x, though 1.x also
// accepts RESP3 types and deeper nesting, which the callers reject as
// unexpected replies).
class ReplyReader {
public:
  ReplyReader();
  ~ReplyReader();
  ReplyReader(ReplyReader&&) noexcept;
  ReplyReader& operator=(ReplyReader&&) noexcept;

  // Appends bytes as they arrived. Throws ReplyTooLarge when a reply
  // announces more than ReplyLimits allows (before hiredis allocates it).
  void feed(std::string_view bytes);

  // Returns the next complete reply; nothing until one has fully arrived.
  // Throws ProtocolError when the bytes are not the Redis protocol.
  std::optional<Reply> next();

private:
  struct ReaderDeleter {
    void operator()(redisReader* reader) const;
  };
  std::unique_ptr<redisReader, ReaderDeleter> m_reader;
  ReplyLimits m_limits;
};

// Returns `args` as one RESP command (an array of bulk strings).
std::string format_command(const std::vector<std::string>& args);

// Returns the version of hiredis (whose parser ReplyReader uses) rlock was
// built with, as "0.14.1".
std::string hiredis_version();

} // namespace rlock::redis
