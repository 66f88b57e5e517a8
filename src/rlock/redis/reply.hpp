#pragma once

#include <hiredis/hiredis.h>

#include <memory>

namespace rlock::redis {

struct ReplyDeleter {
  void
  operator()(redisReply* reply) const {
    freeReplyObject(reply);
  }
};

// A reply from the server; may be an error reply (type REDIS_REPLY_ERROR).
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

} // namespace rlock::redis
