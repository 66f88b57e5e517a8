#pragma once

#include <rlock/redis/connection.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/util/clock.hpp>

#include <optional>
#include <string>
#include <vector>

namespace rlock::redis {

// One connection's share of a fan-out: commands sent together, and their
// replies in order, or why they did not all come.
struct Exchange {
  Connection* connection = nullptr;
  std::vector<std::vector<std::string>> commands;
  std::vector<Reply> replies;
  std::optional<Failure> failure;

  bool
  complete() const {
    return failure.has_value() || replies.size() == commands.size();
  }
};

// When a fan-out may stop waiting before its deadline: once `count` of its
// parts succeeded and `after` has passed.
struct Enough {
  std::size_t count = 0;
  BootTime after{};
};

// Sends every exchange's commands (pipelined) before reading any reply, then
// reads the replies as they come, from one thread, until every exchange has
// them all, `enough` of them have, or `deadline` passes. An exchange whose
// connection fails, or whose replies are not all in by then, gets its
// `failure` (its connection is unusable after that); the others are
// unaffected. Never throws Failure.
void exchange_all(std::vector<Exchange>& exchanges,
                  BootTime deadline,
                  std::optional<Enough> enough = std::nullopt);

// One connection to open in a fan-out: the server, and the connection made
// or why none was.
struct Dial {
  Endpoint endpoint;
  std::optional<Connection> connection;
  std::optional<Failure> failure;
};

// Opens a connection to every dial's server: connects to all at once, from
// one thread, until each is made, `enough` are, or `deadline` passes; then
// logs in on each in turn (TLS, AUTH, SELECT), bounded by `options`. A
// server that does not accept within that (one that drops the connection
// request, a full accept queue) costs the others nothing. Never throws
// Failure.
void dial_all(std::vector<Dial>& dials,
              const ConnectOptions& options,
              BootTime deadline,
              std::optional<Enough> enough = std::nullopt);

} // namespace rlock::redis
