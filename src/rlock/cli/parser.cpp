#include <rlock/cli/commands.hpp>
#include <rlock/cli/parser.hpp>
#include <rlock/cli/raw_options.hpp>
#include <rlock/proc/signals.hpp>
#include <rlock/redis/reply_reader.hpp>
#include <rlock/redis/tls.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>
#include <rlock/version.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>
#include <memory>

namespace rlock::cli {

namespace {

const lock::TimingNames k_timing_names{"--ttl", "--kill-after"};

using namespace std::chrono_literals;
using detail::k_try_help;
using detail::RawOptions;
using Action = StepOptions::Action;

const std::map<std::string, Action, std::less<>> k_steps{
    {"acquire", Action::acquire},
    {"extend", Action::extend},
    {"release", Action::release},
    {"check", Action::check},
    {"wait", Action::wait},
};

// True when `option` ("-t", "--ttl") takes a value in `app`, so that the
// split before NAME can skip it. CLI11's own table decides: flags have no
// value.
bool
takes_value(const CLI::App& app, const std::string& option) {
  const auto* found = app.get_option_no_throw(option);
  return found != nullptr && found->get_expected_min() > 0;
}

// Adds an option whose absence differs from an empty value.
CLI::Option*
add_optional(CLI::App& app,
             const std::string& names,
             std::optional<std::string>& target,
             const std::string& help) {
  return app.add_option_function<std::string>(
      names, [&target](const std::string& value) { target = value; }, help);
}

bool
is_subcommand(std::string_view word) {
  return find_command(word) != nullptr;
}

class Formatter : public CLI::Formatter {
public:
  std::string
  make_usage(const CLI::App* app, std::string) const override {
    if (app->get_parent() != nullptr) {
      return "Usage: " + std::string(find_command(app->get_name())->usage)
             + "\n\n";
    }
    std::string usage = "Usage: rlock [OPTIONS] NAME COMMAND [ARG...]\n"
                        "       rlock [OPTIONS] NAME -c 'SHELL COMMAND'\n"
                        "       rlock [OPTIONS] -- NAME COMMAND [ARG...]\n";
    for (const auto& command : command_table()) {
      usage += "       " + std::string(command.usage) + "\n";
    }
    return usage + "       rlock --help | --version\n\n";
  }
};

void
add_server_options(CLI::App& app, RawOptions& raw) {
  const std::string group = "Connection";
  add_optional(app,
               "--url",
               raw.url,
               "redis[s]://[user[:pass]@]host[:port][/db]\n"
               "or unix:///path.sock[?db=N]\n"
               "($RLOCK_URL, $REDIS_URL, redis://127.0.0.1)")
      ->type_name("URL")
      ->group(group);
  add_optional(
      app, "--prefix", raw.prefix, "key prefix ($RLOCK_PREFIX, rlock:)")
      ->type_name("P")
      ->group(group);
  app.add_option("--connect-timeout",
                 raw.connect_timeout,
                 "per connection attempt (2s)")
      ->type_name("D")
      ->group(group);
  app.add_option("--io-timeout", raw.io_timeout, "per reply (5s)")
      ->type_name("D")
      ->group(group);
  add_optional(app,
               "--password-file",
               raw.password_file,
               "password: the file's first line\n"
               "(else the URL's, $RLOCK_PASSWORD, $REDISCLI_AUTH)")
      ->type_name("FILE")
      ->group(group);
  add_optional(app,
               "--tls-ca",
               raw.tls_ca,
               "rediss://: CA certificates (PEM) to verify\n"
               "the server with (the system's)")
      ->type_name("FILE")
      ->group(group);
  add_optional(
      app, "--tls-cert", raw.tls_cert, "rediss://: client certificate (PEM)")
      ->type_name("FILE")
      ->group(group);
  add_optional(app, "--tls-key", raw.tls_key, "rediss://: its private key")
      ->type_name("FILE")
      ->group(group);
  add_optional(app,
               "--tls-server-name",
               raw.tls_server_name,
               "rediss://: name to verify (the URL's host)")
      ->type_name("NAME")
      ->group(group);
  app.add_flag("--tls-insecure",
               raw.tls_insecure,
               "rediss://: do not verify the server (unsafe)")
      ->group(group);
}

void
add_output_options(CLI::App& app, RawOptions& raw) {
  const std::string output = "Output";
  app.add_flag("-v,--verbose", raw.verbose, "lifecycle lines on stderr")
      ->group(output);
  app.add_flag("-q,--quiet", raw.quiet, "nothing but errors on stderr")
      ->group(output);
  app.set_help_flag("-h,--help", "print this help and exit")->group(output);
}

void
add_wait_options(CLI::App& app, RawOptions& raw, bool with_nonblock) {
  const std::string waiting = "Waiting";
  if (with_nonblock) {
    app.add_flag(
           "-n,--nonblock", raw.nonblock, "fail at once if the lock is held")
        ->group(waiting);
    app.add_flag("--fair", raw.fair, "wait in line: first come, first served")
        ->group(waiting);
  }
  add_optional(app,
               "-w,--wait,--timeout",
               raw.wait,
               "give up after D; -w 0 is -n (forever)")
      ->type_name("D")
      ->group(waiting);
  add_optional(app,
               "--restart-grace",
               raw.restart_grace,
               "take no lock from a server up less than D;\n"
               "0 turns it off ($RLOCK_RESTART_GRACE, 30s)")
      ->type_name("D")
      ->group(waiting);
  app.add_option("-E,--conflict-exit-code",
                 raw.conflict_exit_code,
                 "exit code when not acquired, 0..255 (75)")
      ->type_name("N")
      ->group(waiting);
}

void
setup_run(CLI::App& app, RawOptions& raw) {
  const std::string locking = "Locking";
  add_optional(
      app, "-t,--ttl", raw.ttl, "lease length, renewed every TTL/3 (30s)")
      ->type_name("D")
      ->group(locking);
  add_optional(
      app, "-c,--command", raw.shell_command, "run STR with /bin/sh -c")
      ->type_name("STR")
      ->group(locking);
  app.add_option("--kill-signal",
                 raw.kill_signal,
                 "to the command's group on lock loss (TERM)")
      ->type_name("SIG")
      ->group(locking);
  add_optional(app,
               "--kill-after",
               raw.kill_after,
               "then SIGKILL after D (TTL/6, at most 10s)")
      ->type_name("D")
      ->group(locking);
  const std::string cron = "Cron";
  add_optional(
      app, "--hold", raw.hold, "keep the lock at least D after acquiring it")
      ->type_name("D")
      ->group(cron);
  add_optional(app,
               "--once-per",
               raw.once_per,
               "at most one successful run per D-long slot")
      ->type_name("D")
      ->group(cron);
  add_wait_options(app, raw, true);
  add_server_options(app, raw);
  add_output_options(app, raw);
  app.add_option("--events",
                 raw.events,
                 "lifecycle events as JSON lines to FILE (- for stderr)")
      ->type_name("FILE")
      ->group("Output");
  app.add_flag("-V,--version", raw.version, "print the version and exit")
      ->group("Output");
}

void
setup_status(CLI::App& status, RawOptions& raw) {
  status.add_option("NAME", raw.names, "locks to show (default: all held)")
      ->type_name("");
  const std::string output = "Output";
  status.add_flag("--json", raw.json, "print a JSON array")->group(output);
  status.add_flag("--wide", raw.wide, "never cut the COMMAND column")
      ->group(output);
  status.add_option("--match", raw.match, "only NAMEs matching a glob")
      ->type_name("GLOB")
      ->group(output);
  status.add_flag("--watch", raw.watch, "redraw until interrupted")
      ->group(output);
  status.add_option("-i,--interval", raw.interval, "redraw every D (2s)")
      ->type_name("D")
      ->group(output);
  add_server_options(status, raw);
  status.set_help_flag("-h,--help", "print this help and exit")->group(output);
  status.footer("Exit: 0 all named locks held (or a listing), 1 one is free,\n"
                "69 Redis unavailable, 74 output could not be written.");
}

void
setup_doctor(CLI::App& doctor, RawOptions& raw) {
  add_optional(doctor,
               "-t,--ttl",
               raw.ttl,
               "judge the round trip against a D lease (30s)")
      ->type_name("D")
      ->group("Checks");
  doctor.add_flag("--json", raw.json, "print a JSON object")->group("Output");
  add_server_options(doctor, raw);
  doctor.set_help_flag("-h,--help", "print this help and exit")
      ->group("Output");
  doctor.footer(
      "Checks eviction, persistence, replication, round trip, clock and\n"
      "version; one line each: ok, warn, fail or unknown, name, message.\n"
      "Exit: 0 every check ok, 1 any other, 69 Redis unavailable,\n"
      "74 output could not be written.");
}

void
setup_step(CLI::App& step, Action action, RawOptions& raw) {
  // One value, so that a second word is an unexpected argument, not a new
  // NAME (valued options take their last value).
  step.add_option_function<std::string>(
          "NAME",
          [&raw](const std::string& name) { raw.names.assign(1, name); },
          "the lock")
      ->type_name("")
      ->required();
  const std::string locking = "Locking";
  if (action == Action::acquire || action == Action::extend) {
    add_optional(step,
                 "-t,--ttl",
                 raw.ttl,
                 action == Action::acquire
                     ? "lease length, not renewed (5m)"
                     : "new lease length (the one it was taken with)")
        ->type_name("D")
        ->group(locking);
  }
  if (action != Action::acquire && action != Action::wait) {
    step.add_option("--token", raw.token, "the holder's token ($RLOCK_TOKEN)")
        ->type_name("T")
        ->group(locking);
  }
  if (action == Action::release) {
    step.add_flag("--force", raw.force, "break the lock, whoever holds it")
        ->group(locking);
  }
  if (action == Action::check) {
    step.add_option("--min-validity",
                    raw.min_validity,
                    "succeed only with at least D left (0)")
        ->type_name("D")
        ->group(locking);
  }
  if (action == Action::acquire || action == Action::wait) {
    add_wait_options(step, raw, action == Action::acquire);
  }
  if (action == Action::acquire) {
    step.add_flag("--json", raw.json, "print {name, key, token, fence, ttl_ms}")
        ->group("Output");
    step.add_flag("--env", raw.env, "print RLOCK_* assignments for eval")
        ->group("Output");
  }
  add_server_options(step, raw);
  add_output_options(step, raw);
}

std::unique_ptr<CLI::App>
build_app(RawOptions& raw) {
  auto app = std::make_unique<CLI::App>("Run COMMAND while holding the lock "
                                        "NAME in Redis; exit with its status.");
  app->name("rlock");
  app->formatter(std::make_shared<Formatter>());
  app->get_formatter()->column_width(30);
  // A valued option given twice takes the last value, as in flock, timeout
  // and curl (`alias x='rlock -w 1m'; x -w 5m ...`). Subcommands inherit it.
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  setup_run(*app, raw);
  app->footer(
      "Durations: 500ms, 30s, 5m, 1h, 1.5s, or seconds (0.5).\n"
      "Examples:\n"
      "  rlock -n nightly-report ./report.sh   # skip if another host runs it\n"
      "  rlock -w 10m deploy-prod ./deploy.sh  # wait up to 10 minutes\n"
      "  rlock backup -c 'dump | gzip > db.gz'\n"
      "  eval \"$(rlock acquire --env migrate)\"; ...; rlock release migrate\n"
      "  rlock status\n"
      "Exit: COMMAND's status, 128+N if it died of signal N; 64 usage,\n"
      "69 Redis unavailable, 70 lock lost, 75 not acquired,\n"
      "126/127 COMMAND not executable/not found. See rlock(1).");
  for (const auto& command : command_table()) {
    const std::string name(command.name);
    auto* sub = app->add_subcommand(name, std::string(command.summary));
    sub->formatter(app->get_formatter());
    sub->footer(std::string(command.footer));
    if (name == "status") {
      setup_status(*sub, raw);
    } else if (name == "doctor") {
      setup_doctor(*sub, raw);
    } else {
      setup_step(*sub, k_steps.at(name), raw);
    }
  }
  return app;
}

// The arguments split at NAME: rlock's options before, the command after.
struct Split {
  std::vector<std::string> options;
  std::optional<std::string> name;
  std::vector<std::string> rest;
  bool explicit_name = false; // NAME came after "--"
};

Split
split_at_name(const CLI::App& app, const std::vector<std::string>& args) {
  Split split;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      split.explicit_name = true;
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      break;
    }
    split.options.push_back(arg);
    bool value_follows = false;
    if (arg.starts_with("--")) {
      value_follows =
          arg.find('=') == std::string::npos && takes_value(app, arg);
    } else {
      // A cluster like -nv or -nt5: a valued short option takes the rest.
      for (std::size_t j = 1; j < arg.size(); ++j) {
        if (takes_value(app, std::string("-") + arg[j])) {
          value_follows = j + 1 == arg.size();
          break;
        }
      }
    }
    if (value_follows && i + 1 < args.size()) {
      split.options.push_back(args[++i]);
    }
  }
  if (i < args.size()) {
    split.name = args[i];
    split.rest.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                      args.end());
  }
  return split;
}

// CLI11 reads "-n=1" as -n and an unknown "-=1"; finds the flag in `args`
// that was given a value, to name it instead.
void
throw_if_flag_given_value(const CLI::App& app,
                          const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    const auto equals = arg.find('=');
    if (arg.starts_with('-') && !arg.starts_with("--") && equals != 1
        && equals != std::string::npos) {
      const std::string flag{'-', arg[equals - 1]};
      if (app.get_option_no_throw(flag) != nullptr && !takes_value(app, flag)) {
        throw_usage(flag + ": takes no value, got " + quote(arg)
                    + std::string(k_try_help));
      }
    }
  }
}

// Runs CLI11 on `args`; returns help text when help was asked for.
std::optional<std::string>
run_cli11(CLI::App& app, std::vector<std::string> args) {
  const auto given = args;
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    return app.help();
  } catch (const CLI::ExtrasError& e) {
    const std::string message = e.what();
    const auto colon = message.find(": ");
    const auto extra =
        colon == std::string::npos ? message : message.substr(colon + 2);
    if (extra.starts_with("-=")) {
      const auto parsed = app.get_subcommands();
      throw_if_flag_given_value(parsed.empty() ? app : *parsed.front(), given);
    }
    throw_usage(
        (extra.starts_with('-') ? "unknown option " : "unexpected argument ")
        + quote(extra) + std::string(k_try_help));
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--ttl: 1 required D missing".
    const std::string message = e.what();
    throw_usage(message.substr(0, message.find(':')) + ": missing value"
                + std::string(k_try_help));
  } catch (const CLI::RequiredError&) {
    throw_usage("missing NAME" + std::string(k_try_help));
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    throw_usage(message + std::string(k_try_help));
  }
  return std::nullopt;
}

std::vector<std::string>
command_of(const Split& split, const RawOptions& raw) {
  const auto& rest = split.rest;
  std::optional<std::string> shell = raw.shell_command;
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
    return {"/bin/sh", "-c", *shell};
  }
  if (rest.empty()) {
    throw_usage("missing COMMAND after NAME " + quote(*split.name)
                + std::string(k_try_help));
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

RunOptions
run_options(const RawOptions& raw,
            const Split& split,
            const Environment& environment) {
  if (!split.name) {
    throw_usage("missing NAME" + std::string(k_try_help));
  }
  RunOptions options;
  options.log_level = detail::log_level_of(raw);
  options.server = detail::server_of(raw, environment);
  const auto ttl = detail::duration_of(raw.ttl.value_or("30s"), "--ttl", false);
  const auto kill_after =
      detail::optional_duration_of(raw.kill_after, "--kill-after", true);
  const auto timing = lock::make_timing(ttl, kill_after, k_timing_names);
  if (!timing) {
    throw_usage(timing.error());
  }
  options.timing = timing.value();
  options.wait = detail::optional_duration_of(raw.wait, "--wait", true);
  options.nonblock = raw.nonblock || options.wait == Duration::zero();
  options.fair = raw.fair;
  options.server.restart_grace = detail::restart_grace_of(raw, environment);
  options.conflict_exit_code = detail::exit_code_of(raw.conflict_exit_code);
  options.kill_signal = value_or_usage_error(
      proc::parse_signal(raw.kill_signal), "--kill-signal");
  options.hold = detail::optional_duration_of(raw.hold, "--hold", false);
  options.once_per = once_per_of(raw.once_per);
  options.events_path = raw.events;
  // NAME and COMMAND last: a bad option value explains more than the
  // "missing COMMAND" it may have caused by swallowing a word.
  options.name = detail::validated_name(*split.name);
  options.command = command_of(split, raw);
  return options;
}

StatusOptions
status_options(const RawOptions& raw, const Environment& environment) {
  if (raw.json && (raw.wide || raw.watch)) {
    throw_usage(std::string("--json and ") + (raw.wide ? "--wide" : "--watch")
                + " exclude each other");
  }
  StatusOptions options;
  options.server = detail::server_of(raw, environment);
  options.json = raw.json;
  options.wide = raw.wide;
  options.match = raw.match;
  if (!raw.match.empty() && !raw.names.empty()) {
    throw_usage("--match: filters a listing; give it no NAME, got "
                + quote(raw.names.front()));
  }
  const auto interval = detail::duration_of(raw.interval, "--interval", false);
  if (raw.watch) {
    options.watch = interval;
  }
  for (const auto& name : raw.names) {
    options.names.push_back(detail::validated_name(name));
  }
  return options;
}

DoctorOptions
doctor_options(const RawOptions& raw, const Environment& environment) {
  DoctorOptions options;
  options.server = detail::server_of(raw, environment);
  options.json = raw.json;
  const auto ttl = detail::duration_of(raw.ttl.value_or("30s"), "--ttl", false);
  const auto timing = lock::make_timing(ttl, std::nullopt, k_timing_names);
  if (!timing) {
    throw_usage(timing.error());
  }
  options.timing = timing.value();
  return options;
}

// $RLOCK_TOKEN belongs to the lock $RLOCK_NAME: a job that takes a second
// lock inside `rlock NAME COMMAND` must not use the outer lock's token.
std::string
token_of(const RawOptions& raw,
         const std::string& name,
         const Environment& environment) {
  if (!raw.token.empty()) {
    return raw.token;
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

StepOptions
step_options(Action action,
             const RawOptions& raw,
             const Environment& environment) {
  StepOptions options;
  options.action = action;
  options.log_level = detail::log_level_of(raw);
  options.server = detail::server_of(raw, environment);
  options.wait = detail::optional_duration_of(raw.wait, "--wait", true);
  options.nonblock = raw.nonblock || options.wait == Duration::zero();
  options.fair = raw.fair;
  if (action == Action::acquire || action == Action::wait) {
    options.server.restart_grace = detail::restart_grace_of(raw, environment);
  }
  options.conflict_exit_code = detail::exit_code_of(raw.conflict_exit_code);
  if (raw.json && raw.env) {
    throw_usage("--json and --env exclude each other");
  }
  options.output = raw.json  ? StepOptions::Output::json
                   : raw.env ? StepOptions::Output::env
                             : StepOptions::Output::token;
  if (action == Action::acquire) {
    options.ttl = detail::duration_of(raw.ttl.value_or("5m"), "--ttl", false);
  } else if (action == Action::extend && raw.ttl) {
    options.ttl = detail::duration_of(*raw.ttl, "--ttl", false);
  }
  options.min_validity =
      detail::duration_of(raw.min_validity, "--min-validity", true);
  options.force = raw.force;
  if (raw.force && !raw.token.empty()) {
    throw_usage("--force and --token exclude each other");
  }
  const bool needs_token = (action == Action::extend || action == Action::check
                            || (action == Action::release && !raw.force));
  options.name = detail::validated_name(raw.names.front());
  if (needs_token) {
    options.token = token_of(raw, options.name, environment);
  }
  return options;
}

} // namespace

std::string
version_text() {
  return "rlock " + std::string(k_version) + "\nhiredis "
         + redis::hiredis_version() + "\nTLS: " + redis::tls_library_version()
         + "\n";
}

// Before a subcommand only the options every command shares may stand; a
// run option there is a mistake, or a NAME meant to equal the subcommand.
void
check_options_before(const CLI::App& app, const Split& split) {
  static const std::vector<std::string_view> k_shared{"--url",
                                                      "--prefix",
                                                      "--connect-timeout",
                                                      "--io-timeout",
                                                      "--password-file",
                                                      "--tls-ca",
                                                      "--tls-cert",
                                                      "--tls-key",
                                                      "--tls-server-name",
                                                      "--tls-insecure",
                                                      "-v",
                                                      "--verbose",
                                                      "-q",
                                                      "--quiet",
                                                      "-h",
                                                      "--help",
                                                      "-V",
                                                      "--version"};
  for (std::size_t i = 0; i < split.options.size(); ++i) {
    const std::string& option = split.options[i];
    const auto name = std::string_view(option).substr(0, option.find('='));
    if (std::find(k_shared.begin(), k_shared.end(), name) == k_shared.end()) {
      throw_usage(quote(option) + " does not apply to '" + *split.name
                  + "'; to lock a NAME '" + *split.name + "', write rlock "
                  + "[OPTIONS] -- " + *split.name + " COMMAND");
    }
    if (takes_value(app, option)) {
      ++i; // its value
    }
  }
}

ParsedCommand
parse_command_line(const std::vector<std::string>& args,
                   const Environment& environment) {
  RawOptions raw;
  auto app = build_app(raw);
  const Split split = split_at_name(*app, args);
  const bool subcommand =
      !split.explicit_name && split.name && is_subcommand(*split.name);
  if (subcommand) {
    check_options_before(*app, split);
  }
  if (auto help = run_cli11(*app, subcommand ? args : split.options)) {
    return InfoRequest{*help};
  }
  if (raw.version) {
    return InfoRequest{version_text()};
  }
  if (!subcommand) {
    return run_options(raw, split, environment);
  }
  if (*split.name == "status") {
    return status_options(raw, environment);
  }
  if (*split.name == "doctor") {
    return doctor_options(raw, environment);
  }
  return step_options(k_steps.find(*split.name)->second, raw, environment);
}

} // namespace rlock::cli
