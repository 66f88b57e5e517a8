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

// Sends every exchange's commands (pipelined) before reading any reply, then
// reads the replies as they come, from one thread, until every exchange has
// them all or `deadline` passes. An exchange whose connection fails, or
// whose replies are not all in by then, gets its `failure` (its connection
// is unusable after that); the others are unaffected. Never throws Failure.
void exchange_all(std::vector<Exchange>& exchanges, BootTime deadline);

} // namespace rlock::redis
