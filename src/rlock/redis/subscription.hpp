#pragma once

#include <rlock/redis/connection.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace rlock::redis {

// A connection in subscriber mode, listening on a few channels (SUBSCRIBE)
// and, on a Redis Cluster node, on a few shard channels (SSUBSCRIBE: what
// SPUBLISH reaches, on the shard of the channel's slot only). Wait for fd()
// to turn readable, then ask take_messages().
class Subscription {
public:
  // Connects and subscribes; returns once the server confirmed every channel,
  // so no message published after that can be missed. A server that does
  // not know SSUBSCRIBE (before Redis 7) listens on `channels` only; one
  // that does not serve a shard channel's slot answers MOVED (Failure).
  // Throws Error (unavailable).
  static Subscription open(const Endpoint& endpoint,
                           const ConnectOptions& options,
                           const std::vector<std::string>& channels,
                           const std::vector<std::string>& shard_channels = {});

  // Returns the socket, to wait on with poll(2).
  int fd() const;

  // Returns how many messages arrived since the last call, without blocking.
  // Throws Error (unavailable) when the connection broke.
  int take_messages();

private:
  Subscription(Connection connection, int early_messages);

  Connection m_connection;
  int m_early_messages = 0; // arrived before every channel was confirmed
};

// A connection blocked in BLPOP on a few lists: each element pushed onto one
// of them goes to one blocked connection only, so one push wakes one waiter,
// and a waiter that died no longer blocks and cannot take it. Call listen()
// before waiting for fd() to turn readable, then ask take().
class WakeList {
public:
  // Connects; listens from the first listen() on. Throws Error (unavailable).
  static WakeList open(const Endpoint& endpoint,
                       const ConnectOptions& options,
                       std::vector<std::string> lists);

  // Blocks in BLPOP on the lists, unless it does already. Throws Error
  // (unavailable) when the connection broke.
  void listen();

  // Returns the socket, to wait on with poll(2).
  int fd() const;

  // Returns how many elements were popped since the last call (0 or 1),
  // without blocking; after one, it listens again only from listen() on.
  // Throws Error (unavailable) when the connection broke or the server
  // refused (a moved slot, a master turned replica).
  int take();

private:
  WakeList(Connection connection, std::vector<std::string> lists);
  // "list, list at host:port", for messages.
  std::string where() const;

  Connection m_connection;
  std::vector<std::string> m_lists;
  bool m_listening = false;
};

// Throws Error (unavailable) unless `reply`, from the server at `address`,
// confirms a SUBSCRIBE (or, with `kind` "ssubscribe", an SSUBSCRIBE).
void check_subscribed(const Reply& reply,
                      const std::string& address,
                      std::string_view kind = "subscribe");

// Returns 1 when `reply`, to a BLPOP on what `where` names, is an
// element popped, 0 when it is nil (a timeout). Throws Failure (closed) when
// the server ended the wait for another server to serve it (MOVED, ASK,
// UNBLOCKED: a master turned replica, READONLY), and Failure with the
// server's error for any other error reply (NOPERM...).
int popped_by(const Reply& reply, const std::string& where);

// Returns true when `reply` is a message published on a channel, or on a
// shard channel ("smessage").
bool is_message(const Reply& reply);

} // namespace rlock::redis
