#pragma once

#include <rlock/cli/options.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
class Option;
} // namespace CLI

// Internal to the parser and the commands: the options as typed, and the
// checks that turn them into values. Each check throws Error (usage) with one
// line naming the option and quoting the bad value.
namespace rlock::cli::detail {

inline constexpr std::string_view k_try_help = " (try 'rlock --help')";

// rlock NAME COMMAND's own options, as typed.
struct RunRaw {
  std::optional<std::string> ttl;
  std::optional<std::string> kill_after;
  std::optional<std::string> kill_signal;
  std::optional<std::string> shell_command;
  std::optional<std::string> hold;
  std::optional<std::string> once_per;
  std::optional<std::string> limit;
  bool shared = false;
  bool exclusive = false; // flock's -x: the default, said aloud
  std::string events;
};

struct StatusRaw {
  std::vector<std::string> names;
  bool json = false;
  bool wide = false;
  std::string match;
  bool watch = false;
  std::optional<std::string> interval;
};

struct DoctorRaw {
  std::optional<std::string> name;
  std::optional<std::string> ttl;
  bool json = false;
};

// rlock acquire's own options, as typed.
struct AcquireRaw {
  std::string name;
  std::optional<std::string> ttl; // the lease, not renewed
  std::optional<std::string> limit;
  bool shared = false;
  bool json = false;
  bool env = false;
};

// rlock extend's.
struct ExtendRaw {
  std::string name;
  std::string token;
  std::optional<std::string> length; // -t, --ttl: the new lease length
};

// rlock release's.
struct ReleaseRaw {
  std::string name;
  std::string token;
  bool force = false;
};

// rlock check's.
struct CheckRaw {
  std::string name;
  std::string token;
  std::optional<std::string> min_validity;
};

// rlock wait's: only NAME (its -w and -E are the shared waiting options).
struct WaitFreeRaw {
  std::string name;
};

// Every option as typed; the optional ones are empty when not given (an
// empty string given is an error, not a default). The option groups several
// commands share live here once, each with one meaning (the connection and
// output ones may also stand before a subcommand); each mode's own options
// live in its own struct, so that no field means two things.
struct RawOptions {
  // Connection
  std::vector<std::string> urls; // every --url, in order
  std::optional<std::string> quorum;
  std::optional<std::string> prefix;
  std::optional<std::string> connect_timeout;
  std::optional<std::string> io_timeout;
  std::optional<std::string> password_file;
  std::optional<std::string> password_command;
  std::optional<std::string> password_refresh;
  std::optional<std::string> sentinel_password_file;
  std::optional<std::string> replicas;
  std::optional<std::string> replicas_timeout;
  std::optional<std::string> tls_ca;
  std::optional<std::string> tls_cert;
  std::optional<std::string> tls_key;
  std::optional<std::string> tls_server_name;
  bool tls_insecure = false;
  std::optional<std::string> compat; // --compat STYLE
  // Waiting (run, acquire, wait)
  std::optional<std::string> wait;
  std::optional<std::string> restart_grace;
  std::optional<std::string> conflict_exit_code;
  bool nonblock = false;
  bool fair = false;
  // Output
  bool verbose = false;
  bool quiet = false;
  bool version = false;

  // Each mode's own: run mode or the one subcommand parsed.
  RunRaw run;
  StatusRaw status;
  DoctorRaw doctor;
  AcquireRaw acquire;
  ExtendRaw extend;
  ReleaseRaw release;
  CheckRaw check;
  WaitFreeRaw wait_free;
};

// Registering the options with CLI11 (cli/option_groups.cpp).

// Adds an option whose absence differs from an empty value.
CLI::Option* add_optional(CLI::App& app,
                          const std::string& names,
                          std::optional<std::string>& target,
                          const std::string& help);

// The option groups several commands share.
void add_server_options(CLI::App& app, RawOptions& raw);
void add_output_options(CLI::App& app, RawOptions& raw);
void add_wait_options(CLI::App& app, RawOptions& raw, bool with_nonblock);
// -V, --version.
void add_version_flag(CLI::App& app, RawOptions& raw);
// The one NAME of a step (acquire, extend, release, check, wait), into
// `name`.
void add_step_name(CLI::App& app, std::string& name);
// The "Locking" group's --token, for extend, release and check, into
// `token`.
void add_token_option(CLI::App& app, std::string& token);

// Checking the values typed (cli/raw_options.cpp; the server settings are
// cli/server.cpp's).

// Returns the duration typed for `option`; zero only when `allow_zero`.
Duration duration_of(const std::string& text,
                     const std::string& option,
                     bool allow_zero);

// Returns the duration typed for `option`, or nothing when not given.
std::optional<Duration>
optional_duration_of(const std::optional<std::string>& text,
                     const std::string& option,
                     bool allow_zero);

// Returns the duration typed for `option`, or `fallback` when not given.
Duration duration_or(const std::optional<std::string>& text,
                     Duration fallback,
                     const std::string& option,
                     bool allow_zero);

// Returns the lease timing of --ttl and --kill-after.
lock::LeaseTiming timing_of(Duration ttl, std::optional<Duration> kill_after);

// Returns -n, -w, --fair and -E. Without `with_nonblock` (rlock wait), -w 0
// is still "do not wait".
WaitingOptions waiting_of(const RawOptions& raw);

// Returns the lock's limit (run, acquire): --limit's N, 1..
// defaults::k_max_limit; lock::k_shared_limit when `shared` (--shared); 0
// for neither. Throws a usage error for another value, for both, or with a
// quorum of servers in `server`.
std::int64_t limit_of(const std::optional<std::string>& text,
                      bool shared,
                      const lock::Deployment& server);

// Returns the token of the run this one is nested in ($RLOCK_TOKEN) when it
// asks for a plain or shared hold (`limit`) of the same lock `name`
// ($RLOCK_NAME); "" otherwise (a semaphore's holder may wait for another
// permit).
std::string parent_token_of(std::int64_t limit,
                            const std::string& name,
                            const Environment& environment);

// Returns --restart-grace, else $RLOCK_RESTART_GRACE, else the default; zero
// turns it off (cli/server.cpp).
lock::RestartGrace restart_grace_of(const RawOptions& raw,
                                    const Environment& environment);

// Returns where the locks live: the URL(s) parsed once into the deployment
// the stores take, with the login, TLS settings, prefix and timeouts, from
// the options or the environment (cli/server.cpp). The password comes from
// --password-command or --password-file, else the URL, else
// $RLOCK_PASSWORD_COMMAND or $RLOCK_PASSWORD, else $REDISCLI_AUTH (two of
// one rank together are refused, as are --password-command and a password
// in the URL).
// The restart grace is off: the commands that take one set it.
lock::Deployment server_of(const RawOptions& raw,
                           const Environment& environment);

// Returns --compat's style (cli/compat_option.cpp), the rlock style when
// not given; throws a usage error for an unknown style, or for options and
// deployments the style cannot serve (--limit, --shared, --fair,
// --once-per, a quorum of servers).
lock::Compat compat_of(const RawOptions& raw, const lock::Deployment& server);

// Returns the style of lock `name` for a step that acts on a holder's token
// (extend, release, check): --compat when given, else $RLOCK_COMPAT when
// $RLOCK_NAME says it is this lock's (acquire --env and run mode set both),
// else `server`'s (rlock's own).
lock::Compat step_compat_of(const RawOptions& raw,
                            const lock::Deployment& server,
                            const std::string& name,
                            const Environment& environment);

// Returns the text --compat takes for `compat` ("" for rlock's own style),
// for $RLOCK_COMPAT.
std::string compat_text(const lock::Compat& compat);

// Returns the token of `name`: `typed` (--token), else $RLOCK_TOKEN when
// $RLOCK_NAME says it is this lock's.
std::string token_of(const std::string& typed,
                     const std::string& name,
                     const Environment& environment);

// Returns NAME when it is a valid lock name.
std::string validated_name(const std::string& name);

// Returns the log level of -v / -q, which exclude each other.
log::Level log_level_of(const RawOptions& raw);

} // namespace rlock::cli::detail
