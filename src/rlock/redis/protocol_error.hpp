#pragma once

#include <stdexcept>

namespace rlock::redis {

// The bytes from the server are not the Redis protocol; what() says why.
class ProtocolError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A reply announced more elements or bytes than ReplyLimits allows; what()
// says what it announced.
class ReplyTooLarge : public ProtocolError {
public:
  using ProtocolError::ProtocolError;
};

} // namespace rlock::redis
