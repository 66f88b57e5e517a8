#include <rlock/cli/run_mode.hpp>
#include <rlock/lock/lease.hpp>
#include <rlock/proc/signals.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>

namespace rlock::cli {

namespace {

using detail::k_try_help;

// True for NAMEs like the 9 of `flock -n 9`, flock's lock-a-descriptor form.
bool
is_descriptor_number(const std::string& name) {
  return !name.empty()
         && std::all_of(name.begin(), name.end(), [](unsigned char c) {
              return std::isdigit(c) != 0;
            });
}

std::vector<std::string>
command_of(const std::string& name,
           const std::vector<std::string>& rest,
           const std::optional<std::string>& shell_option,
           const std::optional<std::string>& login_shell) {
  std::optional<std::string> shell = shell_option;
  std::size_t used = 0;
  if (!rest.empty() && (rest[0] == "-c" || rest[0] == "--command")) {
    if (rest.size() < 2) {
      throw_usage(rest[0] + ": missing the shell command"
                  + std::string(k_try_help));
    }
    shell = rest[1];
    used = 2;
  } else if (!rest.empty() && rest[0].starts_with("--command=")) {
    shell = rest[0].substr(10);
    used = 1;
  }
  if (shell && rest.size() > used) {
    throw_usage("--command: takes one shell command; unexpected argument "
                + quote(rest[used]));
  }
  if (shell && shell->empty()) {
    throw_usage("--command: the shell command is empty"
                + std::string(k_try_help));
  }
  if (shell) {
    return {login_shell.value_or("/bin/sh"), "-c", *shell};
  }
  if (rest.empty()) {
    throw_usage("missing COMMAND after NAME " + quote(name)
                + (is_descriptor_number(name)
                       ? "; flock's FD form has no counterpart in rlock: see "
                         "'Coming from flock' in rlock(1)"
                       : std::string(k_try_help)));
  }
  return rest;
}

// Returns --once-per's slot length. Slots longer than 100 years are refused:
// the time a done slot is kept (up to two slot lengths) must fit in int64
// nanoseconds.
std::optional<Duration>
once_per_of(const std::optional<std::string>& text) {
  constexpr auto k_longest = std::chrono::hours(100 * 365 * 24);
  const auto once_per = detail::optional_duration_of(text, "--once-per", false);
  if (once_per && *once_per > k_longest) {
    throw_usage("--once-per: must be at most 876000h (100 years), got "
                + quote(*text));
  }
  return once_per;
}

int
kill_signal_of(const std::optional<std::string>& text) {
  return text ? value_or_usage_error(proc::parse_signal(*text), "--kill-signal")
              : defaults::k_kill_signal;
}

// flock(1)'s spellings that mean what rlock does anyway: accepted, listed in
// --help, and otherwise ignored.
void
add_flock_options(CLI::App& app, detail::RawOptions& raw) {
  const std::string flock = "flock(1) spellings";
  app.add_flag("-x,-e,--exclusive", raw.run.exclusive)
      ->description("accepted: exclusive is the default")
      ->group(flock);
  app.add_flag("--nb,--nonblocking", raw.nonblock, "the same as -n")
      ->group(flock);
  app.add_flag("-o,--close")
      ->description("accepted: COMMAND gets no lock descriptor")
      ->group(flock);
}

// --hold and --once-per keep other runs out: --hold keeps copies from
// running while the lock is held, --once-per lets one run per slot. Other
// holders of a semaphore of more than one or of a shared lock would get in
// beside the run anyway: a usage error rather than a promise that does not
// hold.
void
refuse_alone_options(const RunOptions& options, const detail::RunRaw& run) {
  // A semaphore of one admits nobody beside the run.
  if (options.limit == 0 || options.limit == 1) {
    return;
  }
  const std::string kind = options.limit == lock::k_shared_limit
                               ? std::string("--shared")
                               : "--limit " + *run.limit;
  const auto refuse = [&](const char* option, const std::string& value) {
    throw_usage(std::string(option) + " " + quote(value) + ": not with " + kind
                + ": other holders get in beside the run, so " + option
                + " cannot keep copies out");
  };
  if (run.hold) {
    refuse("--hold", *run.hold);
  }
  if (run.once_per) {
    refuse("--once-per", *run.once_per);
  }
}

} // namespace

std::optional<std::string>
flock_option_advice(const std::string& option) {
  if (option == "-u" || option == "--unlock") {
    return option
           + ": rlock releases the lock itself when COMMAND ends; to release "
             "one taken with 'rlock acquire', use 'rlock release NAME'";
  }
  if (option == "-F" || option == "--no-fork") {
    return option
           + ": rlock must stay running to renew the lease, so COMMAND "
             "always runs as its child; leave it out";
  }
  return std::nullopt;
}

void
add_run_options(CLI::App& app, detail::RawOptions& raw) {
  auto& run = raw.run;
  const std::string locking = "Locking";
  detail::add_optional(app,
                       "-t,--ttl",
                       run.ttl,
                       "lease length, renewed every TTL/"
                           + std::to_string(lock::k_renew_divisor) + " ("
                           + defaults::help_text(defaults::k_run_ttl) + ")")
      ->type_name("D")
      ->group(locking);
  detail::add_optional(app,
                       "-c,--command",
                       run.shell_command,
                       "run STR with $SHELL -c (/bin/sh)")
      ->type_name("STR")
      ->group(locking);
  detail::add_optional(app,
                       "--kill-signal",
                       run.kill_signal,
                       "to the command's group on lock loss ("
                           + proc::signal_name(defaults::k_kill_signal) + ")")
      ->type_name("SIG")
      ->group(locking);
  detail::add_optional(
      app,
      "--kill-after",
      run.kill_after,
      "then SIGKILL after D (TTL/"
          + std::to_string(lock::k_default_kill_after_divisor) + ", at most "
          + defaults::help_text(lock::k_longest_default_kill_after) + ")")
      ->type_name("D")
      ->group(locking);
  detail::add_optional(app,
                       "--limit",
                       run.limit,
                       "a semaphore: at most N holders at once, each "
                       "$RLOCK_SLOT in 0..N-1")
      ->type_name("N")
      ->group(locking);
  app.add_flag("-s,--shared",
               run.shared,
               "a shared (read) lock: shared holders run together, a plain "
               "one alone")
      ->group(locking);
  const std::string cron = "Cron";
  detail::add_optional(
      app, "--hold", run.hold, "keep the lock at least D after acquiring it")
      ->type_name("D")
      ->group(cron);
  detail::add_optional(app,
                       "--once-per",
                       run.once_per,
                       "at most one successful run per D-long slot")
      ->type_name("D")
      ->group(cron);
  detail::add_wait_options(app, raw, true);
  detail::add_server_options(app, raw);
  detail::add_output_options(app, raw);
  app.add_option("--events",
                 run.events,
                 "lifecycle events as JSON lines to FILE (- for stderr)")
      ->type_name("FILE")
      ->group("Output");
  detail::add_version_flag(app, raw);
  add_flock_options(app, raw);
}

RunOptions
run_options_of(const detail::RawOptions& raw,
               const std::string& name,
               const std::vector<std::string>& rest,
               const Environment& environment) {
  const auto& run = raw.run;
  RunOptions options;
  options.log_level = detail::log_level_of(raw);
  options.server = detail::server_of(raw, environment);
  const auto ttl =
      detail::duration_or(run.ttl, defaults::k_run_ttl, "--ttl", false);
  options.timing = detail::timing_of(
      ttl, detail::optional_duration_of(run.kill_after, "--kill-after", true));
  options.waiting = detail::waiting_of(raw);
  options.server.restart_grace = detail::restart_grace_of(raw, environment);
  options.kill_signal = kill_signal_of(run.kill_signal);
  options.hold = detail::optional_duration_of(run.hold, "--hold", false);
  options.once_per = once_per_of(run.once_per);
  options.events_path = run.events;
  if (run.exclusive && run.shared) {
    throw_usage("-s/--shared and -x/-e/--exclusive exclude each other: a "
                "hold is shared or exclusive");
  }
  options.limit = detail::limit_of(run.limit, run.shared, options.server);
  refuse_alone_options(options, run);
  // NAME and COMMAND last: a bad option value explains more than the
  // "missing COMMAND" it may have caused by swallowing a word.
  options.name = detail::validated_name(name);
  options.parent_token =
      detail::parent_token_of(options.limit, options.name, environment);
  options.command =
      command_of(name, rest, run.shell_command, environment.shell);
  return options;
}

} // namespace rlock::cli
