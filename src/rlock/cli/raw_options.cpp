#include <rlock/cli/raw_options.hpp>
#include <rlock/lock/keys.hpp>
#include <rlock/lock/restart_grace.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <utility>

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

Duration
restart_grace_of(const RawOptions& raw, const Environment& environment) {
  if (raw.restart_grace) {
    return duration_of(*raw.restart_grace, "--restart-grace", true);
  }
  if (environment.restart_grace) {
    return duration_of(*environment.restart_grace, "RLOCK_RESTART_GRACE", true);
  }
  return lock::k_default_restart_grace;
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

namespace {

// Returns the first line of a --password-file, without its line end.
std::string
read_password_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    throw_usage("--password-file: cannot read " + quote(path) + ": "
                + std::strerror(errno));
  }
  std::string line;
  std::getline(file, line);
  if (line.ends_with('\r')) {
    line.pop_back();
  }
  if (line.empty()) {
    throw_usage("--password-file: " + quote(path)
                + " is empty (the password is its first line)");
  }
  return line;
}

std::string
password_of(const RawOptions& raw,
            const std::string& url_password,
            const Environment& environment) {
  if (raw.password_file) {
    return read_password_file(*raw.password_file);
  }
  if (!url_password.empty()) {
    return url_password;
  }
  return environment.rlock_password  ? *environment.rlock_password
         : environment.rediscli_auth ? *environment.rediscli_auth
                                     : std::string();
}

// Returns `path` when it names a file that can be read.
std::string
readable_file(const std::optional<std::string>& path,
              const std::string& option) {
  if (!path) {
    return {};
  }
  if (::access(path->c_str(), R_OK) != 0) {
    throw_usage(option + ": cannot read " + quote(*path) + ": "
                + std::strerror(errno));
  }
  return *path;
}

redis::TlsOptions
tls_options_of(const RawOptions& raw,
               const redis::Endpoint& endpoint,
               const std::string& url_source) {
  const std::pair<const char*, bool> given[] = {
      {"--tls-ca", raw.tls_ca.has_value()},
      {"--tls-cert", raw.tls_cert.has_value()},
      {"--tls-key", raw.tls_key.has_value()},
      {"--tls-server-name", raw.tls_server_name.has_value()},
      {"--tls-insecure", raw.tls_insecure}};
  for (const auto& [option, present] : given) {
    if (present && !endpoint.tls) {
      throw_usage(std::string(option) + " needs a rediss:// URL (" + url_source
                  + " is not one)");
    }
  }
  if (raw.tls_cert.has_value() != raw.tls_key.has_value()) {
    throw_usage(raw.tls_cert ? "--tls-cert needs --tls-key"
                             : "--tls-key needs --tls-cert");
  }
  if (raw.tls_server_name && raw.tls_server_name->empty()) {
    throw_usage("--tls-server-name: must not be empty");
  }
  redis::TlsOptions tls;
  tls.ca_file = readable_file(raw.tls_ca, "--tls-ca");
  tls.cert_file = readable_file(raw.tls_cert, "--tls-cert");
  tls.key_file = readable_file(raw.tls_key, "--tls-key");
  tls.server_name = raw.tls_server_name.value_or("");
  tls.insecure = raw.tls_insecure;
  tls.names = {"--tls-ca", "--tls-cert", "--tls-key"};
  return tls;
}

} // namespace

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
  server.endpoint.password =
      password_of(raw, server.endpoint.password, environment);
  server.connect.tls = tls_options_of(raw, server.endpoint, option);
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
