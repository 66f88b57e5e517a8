#pragma once

#include <rlock/util/error.hpp>
#include <rlock/util/exit_codes.hpp>

#include <string>

namespace rlock::redis {

// Talking to the server failed in a way that may pass: the connection could
// not be made, broke or timed out (the TLS handshake too), or the server
// answered that it cannot serve yet (LOADING, BUSY, MASTERDOWN, TRYAGAIN,
// READONLY during a failover, max number of clients reached). A waiter tries
// again on a new connection; anyone else reports it (exit 69).
class TransientError : public Error {
public:
  explicit TransientError(const std::string& message)
      : Error(exit_code::k_unavailable, message) {
  }
};

} // namespace rlock::redis
