#pragma once

#include <rlock/lock/timing.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/util/log.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rlock::cli {

// Where the locks live: server, login and key prefix.
struct ServerOptions {
  redis::Endpoint endpoint;
  redis::ConnectOptions connect;
  std::string prefix = "rlock:";
};

// rlock [OPTIONS] NAME COMMAND [ARG...]
struct RunOptions {
  ServerOptions server;
  std::string name;
  std::vector<std::string> command; // argv; ["/bin/sh", "-c", STR] for -c
  bool nonblock = false;
  bool fair = false;            // --fair: wait in the FIFO queue
  std::optional<Duration> wait; // none: wait forever
  lock::LeaseTiming timing{};
  int conflict_exit_code = 75;
  int kill_signal = 15;
  log::Level log_level = log::Level::normal;
};

// rlock status [--json] [NAME...]
struct StatusOptions {
  ServerOptions server;
  std::vector<std::string> names;
  bool json = false;
};

// --help or --version: text for stdout, exit 0.
struct InfoRequest {
  std::string text;
};

using ParsedCommand = std::variant<RunOptions, StatusOptions, InfoRequest>;

// The environment variables that supply defaults.
struct Environment {
  std::optional<std::string> rlock_url;    // $RLOCK_URL
  std::optional<std::string> redis_url;    // $REDIS_URL
  std::optional<std::string> rlock_prefix; // $RLOCK_PREFIX
};

} // namespace rlock::cli
