#pragma once

#include <rlock/cli/defaults.hpp>
#include <rlock/lock/deployment.hpp>
#include <rlock/lock/timing.hpp>
#include <rlock/util/log.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rlock::cli {

// How long to wait for a lock: -n, -w, --fair and the code when it is not
// acquired (run, acquire, wait).
struct WaitingOptions {
  bool nonblock = false;
  std::optional<Duration> wait; // none: wait forever
  bool fair = false;            // --fair: wait in the FIFO queue
  int conflict_exit_code = defaults::k_conflict_exit_code;
};

// rlock [OPTIONS] NAME COMMAND [ARG...]
struct RunOptions {
  lock::Deployment server; // where the locks live
  std::string name;
  std::vector<std::string> command; // argv; ["/bin/sh", "-c", STR] for -c
  WaitingOptions waiting;
  lock::LeaseTiming timing{};
  int kill_signal = defaults::k_kill_signal;
  log::Level log_level = log::Level::normal;
  std::optional<Duration> hold;     // --hold: keep the lock at least this long
  std::optional<Duration> once_per; // --once-per: one success per slot
  std::string events_path;          // --events: JSON lines; "-" is stderr
  std::int64_t limit = 0;   // --limit N: one of N holders (0: a plain lock)
  std::string parent_token; // --shared inside a shared run of NAME: its token
};

// rlock acquire: take a lock for a script, print its token.
struct AcquireOptions {
  enum class Output { token, json, env };

  lock::Deployment server; // where the locks live
  std::string name;
  Duration ttl{defaults::k_acquire_ttl}; // the lease, not renewed
  WaitingOptions waiting;
  Output output = Output::token;
  log::Level log_level = log::Level::normal;
  std::int64_t limit = 0;   // --limit N: one of N holders (0: a plain lock)
  std::string parent_token; // --shared inside a shared run of NAME: its token
};

// rlock extend: renew a lock taken with acquire.
struct ExtendOptions {
  lock::Deployment server; // where the locks live
  std::string name;
  std::string token;              // --token, else $RLOCK_TOKEN
  std::optional<Duration> length; // none: the length it was taken with
  log::Level log_level = log::Level::normal;
};

// rlock release: give a lock back, or break it with --force.
struct ReleaseOptions {
  lock::Deployment server; // where the locks live
  std::string name;
  std::string token; // empty with --force
  bool force = false;
  log::Level log_level = log::Level::normal;
};

// rlock check: does the token hold the lock, with enough time left?
struct CheckOptions {
  lock::Deployment server; // where the locks live
  std::string name;
  std::string token;
  Duration min_validity{defaults::k_min_validity};
  log::Level log_level = log::Level::normal;
};

// rlock wait: wait until the lock is free, without taking it.
struct WaitFreeOptions {
  lock::Deployment server; // where the locks live
  std::string name;
  WaitingOptions waiting; // -w and -E; never -n or --fair
  log::Level log_level = log::Level::normal;
};

// rlock status [--json] [NAME...]
struct StatusOptions {
  lock::Deployment server; // where the locks live
  std::vector<std::string> names;
  bool json = false;
  bool wide = false;             // --wide: COMMAND never cut
  std::string match;             // --match: glob over NAMEs of a listing
  std::optional<Duration> watch; // --watch: redraw every D until interrupted
};

// rlock doctor [--ttl D] [--json] [NAME]
struct DoctorOptions {
  lock::Deployment server;         // where the locks live
  std::optional<std::string> name; // where this lock lives, too
  lock::LeaseTiming timing{}; // --ttl: the lease the round trip is judged by
  bool json = false;
};

// --help or --version: text for stdout, exit 0.
struct InfoRequest {
  std::string text;
};

using ParsedCommand = std::variant<RunOptions,
                                   AcquireOptions,
                                   ExtendOptions,
                                   ReleaseOptions,
                                   CheckOptions,
                                   WaitFreeOptions,
                                   StatusOptions,
                                   DoctorOptions,
                                   InfoRequest>;

// The environment variables that supply defaults.
struct Environment {
  std::optional<std::string> rlock_url;              // $RLOCK_URL
  std::optional<std::string> redis_url;              // $REDIS_URL
  std::optional<std::string> rlock_prefix;           // $RLOCK_PREFIX
  std::optional<std::string> rlock_token;            // $RLOCK_TOKEN
  std::optional<std::string> rlock_password;         // $RLOCK_PASSWORD
  std::optional<std::string> rlock_password_command; // $RLOCK_PASSWORD_COMMAND
  std::optional<std::string> rediscli_auth;          // $REDISCLI_AUTH
  std::optional<std::string> rlock_name;    // $RLOCK_NAME: $RLOCK_TOKEN's lock
  std::optional<std::string> rlock_compat;  // $RLOCK_COMPAT: its --compat
  std::optional<std::string> restart_grace; // $RLOCK_RESTART_GRACE
  std::optional<std::string> sentinel_password; // $RLOCK_SENTINEL_PASSWORD
  std::optional<std::string> replicas;          // $RLOCK_REPLICAS
  std::optional<std::string> shell; // $SHELL: runs -c STR, as in flock(1)
};

} // namespace rlock::cli
