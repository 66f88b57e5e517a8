#include <rlock/cli/raw_options.hpp>
#include <rlock/lock/keys.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>

#include <charconv>

namespace rlock::cli::detail {

namespace {

constexpr std::string_view k_default_url = "redis://127.0.0.1:6379/0";

} // namespace

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

int
exit_code_of(const std::string& text) {
  int value = -1;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0
      || value > 255) {
    throw_usage("--conflict-exit-code: must be an integer from 0 to 255, got "
                + quote(text));
  }
  return value;
}

ServerOptions
server_of(const RawOptions& raw, const Environment& environment) {
  ServerOptions server;
  std::string option = "--url";
  std::string url;
  if (raw.url) {
    url = *raw.url;
  } else if (environment.rlock_url) {
    url = *environment.rlock_url;
    option = "RLOCK_URL";
  } else if (environment.redis_url) {
    url = *environment.redis_url;
    option = "REDIS_URL";
  } else {
    url = k_default_url;
  }
  server.endpoint = value_or_usage_error(redis::parse_url(url), option);
  // An empty --prefix is a prefix like any other.
  server.prefix = raw.prefix                 ? *raw.prefix
                  : environment.rlock_prefix ? *environment.rlock_prefix
                                             : "rlock:";
  server.connect.connect_timeout =
      duration_of(raw.connect_timeout, "--connect-timeout", false);
  server.connect.io_timeout =
      duration_of(raw.io_timeout, "--io-timeout", false);
  return server;
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
