#pragma once

#include <rlock/redis/connection.hpp>

#include <string>
#include <vector>

namespace rlock::redis {

// A connection in subscriber mode, listening on a few channels. Wait for
// fd() to turn readable, then ask take_messages().
class Subscription {
public:
  // Connects and subscribes; returns once the server confirmed every channel,
  // so no message published after that can be missed. Throws Error
  // (unavailable).
  static Subscription open(const Endpoint& endpoint,
                           const ConnectOptions& options,
                           const std::vector<std::string>& channels);

  // Returns the socket, to wait on with poll(2).
  int fd() const;

  // Returns how many messages arrived since the last call, without blocking.
  // Throws Error (unavailable) when the connection broke.
  int take_messages();

private:
  explicit Subscription(Connection connection);

  Connection m_connection;
};

// Throws Error (unavailable) unless `reply`, from the server at `address`,
// confirms a SUBSCRIBE.
void check_subscribed(const Reply& reply, const std::string& address);

// Returns true when `reply` is a message published on a channel.
bool is_message(const Reply& reply);

} // namespace rlock::redis
