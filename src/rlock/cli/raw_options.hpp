#pragma once

#include <rlock/cli/options.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Internal to the parser: the options as typed, and the checks that turn
// them into values. Each check throws Error (usage) with one line naming the
// option and quoting the bad value.
namespace rlock::cli::detail {

inline constexpr std::string_view k_try_help = " (try 'rlock --help')";

// Every option of every command, as typed; the optional ones are empty when
// not given (an empty string given is an error, not a default).
struct RawOptions {
  std::optional<std::string> url;
  std::optional<std::string> prefix;
  std::optional<std::string> wait;
  std::optional<std::string> ttl;
  std::optional<std::string> kill_after;
  std::optional<std::string> password_file;
  std::optional<std::string> tls_ca;
  std::optional<std::string> tls_cert;
  std::optional<std::string> tls_key;
  std::optional<std::string> tls_server_name;
  bool tls_insecure = false;
  std::string connect_timeout = "2s";
  std::string io_timeout = "5s";
  std::string conflict_exit_code = "75";
  std::string kill_signal = "TERM";
  std::optional<std::string> shell_command;
  std::optional<std::string> hold;
  std::optional<std::string> once_per;
  std::string events;
  std::string token;
  std::string min_validity = "0";
  std::string match;
  std::string interval = "2s";
  bool nonblock = false;
  bool fair = false;
  bool verbose = false;
  bool quiet = false;
  bool version = false;
  bool json = false;
  bool env = false;
  bool force = false;
  bool wide = false;
  bool watch = false;
  std::vector<std::string> names; // status NAMEs, or the one NAME of a step
};

// Returns the duration typed for `option`; zero only when `allow_zero`.
Duration duration_of(const std::string& text,
                     const std::string& option,
                     bool allow_zero);

// Returns the duration typed for `option`, or nothing when not given.
std::optional<Duration>
optional_duration_of(const std::optional<std::string>& text,
                     const std::string& option,
                     bool allow_zero);

// Returns --conflict-exit-code's value, 0..255.
int exit_code_of(const std::string& text);

// Returns the server, login, TLS settings and prefix, from the options or the
// environment. The password comes from --password-file, else the URL, else
// $RLOCK_PASSWORD, else $REDISCLI_AUTH.
ServerOptions server_of(const RawOptions& raw, const Environment& environment);

// Returns NAME when it is a valid lock name.
std::string validated_name(const std::string& name);

// Returns the log level of -v / -q, which exclude each other.
log::Level log_level_of(const RawOptions& raw);

} // namespace rlock::cli::detail
