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
  std::optional<Duration> hold;     // --hold: keep the lock at least this long
  std::optional<Duration> once_per; // --once-per: one success per slot
  std::string events_path;          // --events: JSON lines; "-" is stderr
};

// rlock acquire|extend|release|check|wait: one step of a lock's life, for
// shell scripts.
struct StepOptions {
  enum class Action { acquire, extend, release, check, wait };
  enum class Output { token, json, env };

  Action action = Action::acquire;
  ServerOptions server;
  std::string name;
  std::string token; // --token, else $RLOCK_TOKEN
  Duration ttl{};    // acquire: --ttl (5m); extend: zero keeps the lock's
  bool nonblock = false;
  std::optional<Duration> wait;
  bool fair = false;
  int conflict_exit_code = 75;
  Output output = Output::token;
  bool force = false;
  Duration min_validity{};
  log::Level log_level = log::Level::normal;
};

// rlock status [--json] [NAME...]
struct StatusOptions {
  ServerOptions server;
  std::vector<std::string> names;
  bool json = false;
  bool wide = false;             // --wide: COMMAND never cut
  std::string match;             // --match: glob over NAMEs of a listing
  std::optional<Duration> watch; // --watch: redraw every D until interrupted
};

// rlock doctor [--ttl D] [--json]
struct DoctorOptions {
  ServerOptions server;
  lock::LeaseTiming timing{}; // --ttl: the lease the round trip is judged by
  bool json = false;
};

// --help or --version: text for stdout, exit 0.
struct InfoRequest {
  std::string text;
};

using ParsedCommand = std::
    variant<RunOptions, StatusOptions, StepOptions, DoctorOptions, InfoRequest>;

// The environment variables that supply defaults.
struct Environment {
  std::optional<std::string> rlock_url;      // $RLOCK_URL
  std::optional<std::string> redis_url;      // $REDIS_URL
  std::optional<std::string> rlock_prefix;   // $RLOCK_PREFIX
  std::optional<std::string> rlock_token;    // $RLOCK_TOKEN
  std::optional<std::string> rlock_password; // $RLOCK_PASSWORD
  std::optional<std::string> rediscli_auth;  // $REDISCLI_AUTH
  std::optional<std::string> rlock_name;     // $RLOCK_NAME: $RLOCK_TOKEN's lock
};

} // namespace rlock::cli
