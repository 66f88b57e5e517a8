#include <rlock/cli/raw_options.hpp>
#include <rlock/lock/lease.hpp>
#include <rlock/store/keys.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/integer.hpp>
#include <rlock/util/text.hpp>

// The checks that turn the options as typed into values; each throws a usage
// error naming the option and quoting the bad value. The server settings are
// cli/server.cpp's.

namespace rlock::cli::detail {

Duration
duration_of(const std::string& text,
            const std::string& option,
            bool allow_zero) {
  const auto duration = value_or_usage_error(parse_duration(text), option);
  if (!allow_zero && duration == Duration::zero()) {
    throw_usage(option + ": must be greater than zero, got " + quote(text));
  }
  return duration;
}

std::optional<Duration>
optional_duration_of(const std::optional<std::string>& text,
                     const std::string& option,
                     bool allow_zero) {
  if (!text) {
    return std::nullopt;
  }
  return duration_of(*text, option, allow_zero);
}

Duration
duration_or(const std::optional<std::string>& text,
            Duration fallback,
            const std::string& option,
            bool allow_zero) {
  return text ? duration_of(*text, option, allow_zero) : fallback;
}

namespace {

// Returns --conflict-exit-code's value, 0..255.
int
exit_code_of(const std::string& text) {
  const auto value = parse_integer(text, 0, 255);
  if (!value) {
    throw_usage("--conflict-exit-code: must be an integer from 0 to 255, got "
                + quote(text));
  }
  return static_cast<int>(*value);
}

} // namespace

lock::LeaseTiming
timing_of(Duration ttl, std::optional<Duration> kill_after) {
  const auto timing =
      lock::make_timing(ttl, kill_after, {"--ttl", "--kill-after"});
  if (!timing) {
    throw_usage(timing.error());
  }
  return timing.value();
}

// Returns --limit's N, 1..k_max_limit; lock::k_shared_limit for --shared;
// 0 for neither. Several --url are refused: a permit granted by a majority
// of servers is not one of N (two majorities of the quorum's servers may
// each count N holders of their own), so N permits over a quorum would
// admit more than N; and a quorum keeps one holder per NAME.
// Returns --limit's N; throws for anything but an integer 1..k_max_limit.
std::int64_t
parse_limit(const std::string& text) {
  const auto limit = parse_integer(text, 1, defaults::k_max_limit);
  if (!limit) {
    throw_usage("--limit: must be an integer from 1 to "
                + std::to_string(defaults::k_max_limit) + ", got "
                + quote(text));
  }
  return *limit;
}

std::int64_t
limit_of(const std::optional<std::string>& text,
         bool shared,
         const lock::Deployment& server) {
  const bool quorum = std::holds_alternative<lock::Quorum>(server.topology);
  // A bad value is named first, whatever it is combined with.
  const std::int64_t limit = text ? parse_limit(*text) : 0;
  if (shared && text) {
    throw_usage("--shared: not with --limit " + quote(*text)
                + ": --shared admits any number of holders, --limit N "
                  "counts them");
  }
  if (shared && quorum) {
    throw_usage("--shared: not with several --url: a quorum of servers "
                "keeps one holder per NAME");
  }
  if (shared) {
    return lock::k_shared_limit;
  }
  if (limit > 0 && quorum) {
    throw_usage("--limit: not with several --url: N permits over a quorum "
                "of servers is unsound (two majorities may each grant their "
                "own N)");
  }
  return limit;
}

std::string
parent_token_of(std::int64_t limit,
                const std::string& name,
                const Environment& environment) {
  if (limit > 0 || environment.rlock_name != name) {
    return "";
  }
  return environment.rlock_token.value_or("");
}

WaitingOptions
waiting_of(const RawOptions& raw) {
  WaitingOptions waiting;
  waiting.wait = optional_duration_of(raw.wait, "--wait", true);
  waiting.nonblock = raw.nonblock || waiting.wait == Duration::zero();
  if (raw.nonblock) {
    waiting.wait.reset(); // -n wins over -w, as in flock: no wait at all
  }
  waiting.fair = raw.fair;
  if (raw.conflict_exit_code) {
    waiting.conflict_exit_code = exit_code_of(*raw.conflict_exit_code);
  }
  return waiting;
}

// $RLOCK_TOKEN belongs to the lock $RLOCK_NAME: a job that takes a second
// lock inside `rlock NAME COMMAND` must not use the outer lock's token.
std::string
token_of(const std::string& typed,
         const std::string& name,
         const Environment& environment) {
  if (!typed.empty()) {
    return typed;
  }
  if (!environment.rlock_token || environment.rlock_token->empty()) {
    throw_usage("--token: required, or set $RLOCK_TOKEN");
  }
  if (!environment.rlock_name) {
    throw_usage("--token: required; $RLOCK_TOKEN counts only when $RLOCK_NAME"
                " is "
                + quote(name) + ", and $RLOCK_NAME is not set");
  }
  if (*environment.rlock_name != name) {
    throw_usage("--token: required; $RLOCK_TOKEN is the token of "
                + quote(*environment.rlock_name) + " ($RLOCK_NAME), not of "
                + quote(name));
  }
  return *environment.rlock_token;
}

std::string
validated_name(const std::string& name) {
  return value_or_usage_error(lock::validate_name(name), "NAME");
}

log::Level
log_level_of(const RawOptions& raw) {
  if (raw.verbose && raw.quiet) {
    throw_usage("--verbose and --quiet exclude each other");
  }
  return raw.verbose ? log::Level::verbose
         : raw.quiet ? log::Level::quiet
                     : log::Level::normal;
}

} // namespace rlock::cli::detail
