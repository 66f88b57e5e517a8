#include <rlock/cli/parser.hpp>
#include <rlock/lock/keys.hpp>
#include <rlock/proc/signals.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>
#include <rlock/version.hpp>

#include <CLI/CLI.hpp>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <memory>

namespace rlock::cli {

namespace {

using namespace std::chrono_literals;

constexpr std::string_view k_default_url = "redis://127.0.0.1:6379/0";
constexpr std::string_view k_try_help = " (try 'rlock --help')";

// The options as typed, before validation.
struct RawOptions {
  std::string url;
  std::string prefix;
  std::string wait;
  std::string ttl = "30s";
  std::string kill_after;
  std::string connect_timeout = "2s";
  std::string io_timeout = "5s";
  std::string conflict_exit_code = "75";
  std::string kill_signal = "TERM";
  std::string shell_command;
  bool nonblock = false;
  bool fair = false;
  bool verbose = false;
  bool quiet = false;
  bool version = false;
  bool json = false;
  std::vector<std::string> status_names;
};

// The options that take a value, so that the split before NAME can skip it.
const std::vector<std::string_view> k_valued_options{"--url",
                                                     "--prefix",
                                                     "-w",
                                                     "--wait",
                                                     "--timeout",
                                                     "-t",
                                                     "--ttl",
                                                     "-E",
                                                     "--conflict-exit-code",
                                                     "-c",
                                                     "--command",
                                                     "--kill-signal",
                                                     "--kill-after",
                                                     "--connect-timeout",
                                                     "--io-timeout"};

bool
takes_value(std::string_view option) {
  return std::find(k_valued_options.begin(), k_valued_options.end(), option)
         != k_valued_options.end();
}

class Formatter : public CLI::Formatter {
public:
  std::string
  make_usage(const CLI::App* app, std::string) const override {
    if (app->get_parent() != nullptr) {
      return "Usage: rlock status [--json] [OPTIONS] [NAME...]\n\n";
    }
    return "Usage: rlock [OPTIONS] NAME COMMAND [ARG...]\n"
           "       rlock [OPTIONS] NAME -c 'SHELL COMMAND'\n"
           "       rlock [OPTIONS] -- NAME COMMAND [ARG...]\n"
           "       rlock [OPTIONS] -c 'SHELL COMMAND' NAME\n"
           "       rlock status [--json] [--url URL] [--prefix P] [NAME...]\n"
           "       rlock --help | --version\n\n";
  }
};

void
add_server_options(CLI::App& app, RawOptions& raw) {
  const std::string group = "Connection";
  app.add_option("--url",
                 raw.url,
                 "redis://[user[:pass]@]host[:port][/db]\n"
                 "or unix:///path.sock[?db=N]\n"
                 "($RLOCK_URL, $REDIS_URL, redis://127.0.0.1)")
      ->type_name("URL")
      ->group(group);
  app.add_option("--prefix", raw.prefix, "key prefix ($RLOCK_PREFIX, rlock:)")
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
}

void
add_locking_options(CLI::App& app, RawOptions& raw) {
  const std::string locking = "Locking";
  app.add_option("-t,--ttl", raw.ttl, "lease length, renewed every TTL/3 (30s)")
      ->type_name("D")
      ->group(locking);
  app.add_option("-c,--command", raw.shell_command, "run STR with /bin/sh -c")
      ->type_name("STR")
      ->group(locking);
  app.add_option("--kill-signal",
                 raw.kill_signal,
                 "to the command's group on lock loss (TERM)")
      ->type_name("SIG")
      ->group(locking);
  app.add_option("--kill-after",
                 raw.kill_after,
                 "then SIGKILL after D (TTL/6, at most 10s)")
      ->type_name("D")
      ->group(locking);
  const std::string waiting = "Waiting";
  app.add_flag(
         "-n,--nonblock", raw.nonblock, "fail at once if the lock is held")
      ->group(waiting);
  app.add_flag("--fair", raw.fair, "wait in line: first come, first served")
      ->group(waiting);
  app.add_option("-w,--wait,--timeout",
                 raw.wait,
                 "give up after D; -w 0 is -n (forever)")
      ->type_name("D")
      ->group(waiting);
  app.add_option("-E,--conflict-exit-code",
                 raw.conflict_exit_code,
                 "exit code when not acquired, 0..255 (75)")
      ->type_name("N")
      ->group(waiting);
}

void
add_output_options(CLI::App& app, RawOptions& raw) {
  const std::string output = "Output";
  app.add_flag("-v,--verbose", raw.verbose, "lifecycle lines on stderr")
      ->group(output);
  app.add_flag("-q,--quiet", raw.quiet, "nothing but errors on stderr")
      ->group(output);
  app.set_help_flag("-h,--help", "print this help and exit")->group(output);
  app.add_flag("-V,--version", raw.version, "print the version and exit")
      ->group(output);
}

std::unique_ptr<CLI::App>
build_app(RawOptions& raw) {
  auto app = std::make_unique<CLI::App>("Run COMMAND while holding the lock "
                                        "NAME in Redis; exit with its status.");
  app->name("rlock");
  app->formatter(std::make_shared<Formatter>());
  app->get_formatter()->column_width(30);
  add_locking_options(*app, raw);
  add_server_options(*app, raw);
  add_output_options(*app, raw);
  app->footer(
      "Durations: 500ms, 30s, 5m, 1h, 1.5s, or seconds (0.5).\n"
      "Examples:\n"
      "  rlock -n nightly-report ./report.sh   # skip if another host runs it\n"
      "  rlock -w 10m deploy-prod ./deploy.sh  # wait up to 10 minutes\n"
      "  rlock backup -c 'dump | gzip > db.gz'\n"
      "  rlock status\n"
      "Exit: COMMAND's status, 128+N if it died of signal N; 64 usage,\n"
      "69 Redis unavailable, 70 lock lost, 75 not acquired,\n"
      "126/127 COMMAND not executable/not found. See rlock(1).");
  auto* status = app->add_subcommand("status", "show who holds which lock");
  status->formatter(app->get_formatter());
  status
      ->add_option(
          "NAME", raw.status_names, "locks to show (default: all held)")
      ->type_name("");
  status->add_flag("--json", raw.json, "print a JSON array")->group("Output");
  add_server_options(*status, raw);
  status->set_help_flag("-h,--help", "print this help and exit")
      ->group("Output");
  status->footer("Exit: 0 all named locks held (or a listing), 1 one is free,\n"
                 "69 Redis unavailable, 74 output could not be written.");
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
split_at_name(const std::vector<std::string>& args) {
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
      value_follows = arg.find('=') == std::string::npos && takes_value(arg);
    } else {
      // A cluster like -nv or -nt5: a valued short option takes the rest.
      for (std::size_t j = 1; j < arg.size(); ++j) {
        if (takes_value(std::string("-") + arg[j])) {
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

// Runs CLI11 on `args`; returns help text when help was asked for.
std::optional<std::string>
run_cli11(CLI::App& app, std::vector<std::string> args) {
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
    throw_usage(
        (extra.starts_with('-') ? "unknown option " : "unexpected argument ")
        + quote(extra) + std::string(k_try_help));
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--ttl: 1 required D missing".
    const std::string message = e.what();
    throw_usage(message.substr(0, message.find(':')) + ": missing value"
                + std::string(k_try_help));
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    throw_usage(message + std::string(k_try_help));
  }
  return std::nullopt;
}

Duration
parse_duration_option(const std::string& text,
                      const std::string& option,
                      bool allow_zero) {
  const auto duration = value_or_usage_error(parse_duration(text), option);
  if (!allow_zero && duration == Duration::zero()) {
    throw_usage(option + ": must be greater than zero, got " + quote(text));
  }
  return duration;
}

int
parse_exit_code(const std::string& text) {
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
server_options(const RawOptions& raw, const Environment& environment) {
  ServerOptions server;
  std::string option = "--url";
  std::string url = raw.url;
  if (url.empty() && environment.rlock_url) {
    url = *environment.rlock_url;
    option = "RLOCK_URL";
  } else if (url.empty() && environment.redis_url) {
    url = *environment.redis_url;
    option = "REDIS_URL";
  } else if (url.empty()) {
    url = k_default_url;
  }
  server.endpoint = value_or_usage_error(redis::parse_url(url), option);
  server.prefix = !raw.prefix.empty()        ? raw.prefix
                  : environment.rlock_prefix ? *environment.rlock_prefix
                                             : "rlock:";
  server.connect.connect_timeout =
      parse_duration_option(raw.connect_timeout, "--connect-timeout", false);
  server.connect.io_timeout =
      parse_duration_option(raw.io_timeout, "--io-timeout", false);
  return server;
}

std::string
validated_name(const std::string& name) {
  return value_or_usage_error(lock::validate_name(name), "NAME");
}

std::vector<std::string>
command_of(const Split& split, const RawOptions& raw) {
  const auto& rest = split.rest;
  std::string shell = raw.shell_command;
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
  const bool has_shell = used > 0 || !raw.shell_command.empty();
  if (has_shell && rest.size() > used) {
    throw_usage("--command: takes one shell command; unexpected argument "
                + quote(rest[used]));
  }
  if (has_shell) {
    return {"/bin/sh", "-c", shell};
  }
  if (rest.empty()) {
    throw_usage("missing COMMAND after NAME " + quote(*split.name)
                + std::string(k_try_help));
  }
  return rest;
}

RunOptions
run_options(const RawOptions& raw,
            const Split& split,
            const Environment& environment) {
  if (!split.name) {
    throw_usage("missing NAME" + std::string(k_try_help));
  }
  if (raw.verbose && raw.quiet) {
    throw_usage("--verbose and --quiet exclude each other");
  }
  RunOptions options;
  options.server = server_options(raw, environment);
  const auto ttl = parse_duration_option(raw.ttl, "--ttl", false);
  std::optional<Duration> kill_after;
  if (!raw.kill_after.empty()) {
    kill_after = parse_duration_option(raw.kill_after, "--kill-after", true);
  }
  const auto timing = lock::make_timing(ttl, kill_after);
  if (!timing) {
    throw_usage(timing.error());
  }
  options.timing = timing.value();
  if (!raw.wait.empty()) {
    options.wait = parse_duration_option(raw.wait, "--wait", true);
  }
  options.nonblock = raw.nonblock || options.wait == Duration::zero();
  options.fair = raw.fair;
  options.conflict_exit_code = parse_exit_code(raw.conflict_exit_code);
  options.kill_signal = value_or_usage_error(
      proc::parse_signal(raw.kill_signal), "--kill-signal");
  // NAME and COMMAND last: a bad option value explains more than the
  // "missing COMMAND" it may have caused by swallowing a word.
  options.name = validated_name(*split.name);
  options.command = command_of(split, raw);
  options.log_level = raw.verbose ? log::Level::verbose
                      : raw.quiet ? log::Level::quiet
                                  : log::Level::normal;
  return options;
}

StatusOptions
status_options(const RawOptions& raw, const Environment& environment) {
  StatusOptions options;
  options.server = server_options(raw, environment);
  options.json = raw.json;
  for (const auto& name : raw.status_names) {
    options.names.push_back(validated_name(name));
  }
  return options;
}

} // namespace

std::string
version_text() {
  return "rlock " + std::string(k_version) + "\nhiredis "
         + std::to_string(HIREDIS_MAJOR) + "." + std::to_string(HIREDIS_MINOR)
         + "." + std::to_string(HIREDIS_PATCH) + "\nTLS: not built in\n";
}

ParsedCommand
parse_command_line(const std::vector<std::string>& args,
                   const Environment& environment) {
  RawOptions raw;
  auto app = build_app(raw);
  const Split split = split_at_name(args);
  const bool is_status = !split.explicit_name && split.name == "status";
  auto help = run_cli11(*app, is_status ? args : split.options);
  if (help) {
    return InfoRequest{*help};
  }
  if (raw.version) {
    return InfoRequest{version_text()};
  }
  if (is_status) {
    return status_options(raw, environment);
  }
  return run_options(raw, split, environment);
}

} // namespace rlock::cli
