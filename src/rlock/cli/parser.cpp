#include <rlock/cli/commands.hpp>
#include <rlock/cli/defaults.hpp>
#include <rlock/cli/parser.hpp>
#include <rlock/cli/raw_options.hpp>
#include <rlock/cli/run_mode.hpp>
#include <rlock/redis/reply_reader.hpp>
#include <rlock/redis/tls.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>
#include <rlock/version.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <sstream>

namespace rlock::cli {

namespace {

using namespace std::chrono_literals;
using detail::k_try_help;
using detail::RawOptions;

// True when `option` ("-t", "--ttl") takes a value in `app`, so that the
// split before NAME can skip it. CLI11's own table decides: flags have no
// value.
bool
takes_value(const CLI::App& app, const std::string& option) {
  const auto* found = app.get_option_no_throw(option);
  return found != nullptr && found->get_expected_min() > 0;
}

bool
is_subcommand(std::string_view word) {
  return find_command(word) != nullptr;
}

class Formatter : public CLI::Formatter {
public:
  // CLI11 starts each group with a blank line and also ends all but the
  // last with one: two between groups. One is enough. (The positionals
  // come before the groups and get no line after them from CLI11.)
  std::string
  make_group(std::string group,
             bool is_positional,
             std::vector<const CLI::Option*> opts) const override {
    auto text = CLI::Formatter::make_group(
        std::move(group), is_positional, std::move(opts));
    if (text.starts_with('\n')) {
      text.erase(0, 1);
    }
    return is_positional ? text + "\n" : text;
  }

  std::string
  make_usage(const CLI::App* app, std::string) const override {
    if (app->get_parent() != nullptr) {
      return "Usage: " + std::string(find_command(app->get_name())->usage)
             + "\n\n";
    }
    std::string usage;
    const auto add = [&usage](std::string_view line) {
      usage +=
          (usage.empty() ? "Usage: " : "       ") + std::string(line) + "\n";
    };
    for (const auto line : k_run_usages) {
      add(line);
    }
    for (const auto& command : command_table()) {
      add(command.usage);
    }
    add("rlock --help | --version");
    return usage + "\n";
  }
};

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
  add_run_options(*app, raw);
  app->footer(
      "Durations: 500ms, 30s, 5m, 1h, 1.5s, or seconds (0.5).\n"
      "Examples:\n"
      "  rlock -n nightly-report ./report.sh   # skip if another host runs it\n"
      "  rlock -w 10m deploy-prod ./deploy.sh  # wait up to 10 minutes\n"
      "  rlock backup -c 'dump | gzip > db.gz'\n"
      "  eval \"$(rlock acquire --env migrate)\"; ...; rlock release migrate\n"
      "  rlock status\n"
      "Exit: COMMAND's status, 128+N if it died of signal N; 64 usage,\n"
      "69 Redis unavailable, 70 lock lost, "
      + std::to_string(defaults::k_conflict_exit_code)
      + " not acquired,\n"
        "126/127 COMMAND not executable/not found. See rlock(1).");
  // Each subcommand's options come with add_command_options(), for the one
  // given: every command's table built on every run costs more than the
  // rest of a run's start-up.
  for (const auto& command : command_table()) {
    const std::string name(command.name);
    auto* sub = app->add_subcommand(name, std::string(command.summary));
    sub->formatter(app->get_formatter());
    sub->footer(command.footer);
  }
  return app;
}

void
add_command_options(CLI::App& app, const std::string& name, RawOptions& raw) {
  find_command(name)->add_options(*app.get_subcommand(name), raw);
}

// The arguments split at NAME: rlock's options before, the command after.
struct Split {
  std::vector<std::string> options;
  std::optional<std::string> name;
  std::vector<std::string> rest;
  bool explicit_name = false; // NAME came after "--"
  // The option that took the last word as its value ("--timeout" in
  // "rlock --timeout FILE"), when no NAME is left.
  std::optional<std::string> took_last;
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
      split.took_last = arg;
    } else {
      split.took_last.reset();
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

// CLI11 takes "--nonblock=no" as --nonblock: a long flag given a value is a
// usage error, as "-n=1" is (and as flock and getopt_long have it).
void
throw_if_long_flag_given_value(const CLI::App& app,
                               const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    if (arg == "--") {
      return;
    }
    const auto equals = arg.find('=');
    if (!arg.starts_with("--") || equals == std::string::npos) {
      continue;
    }
    const auto flag = arg.substr(0, equals);
    if (app.get_option_no_throw(flag) != nullptr && !takes_value(app, flag)) {
      throw_usage(flag + ": takes no value, got " + quote(arg)
                  + std::string(k_try_help));
    }
  }
}

// CLI11 names every argument it did not expect, space-separated (in the
// reversed order it parsed them in): returns the first of them as typed.
std::string
first_as_typed(const std::string& extras,
               const std::vector<std::string>& given) {
  std::set<std::string> unexpected;
  std::istringstream words(extras);
  for (std::string word; words >> word;) {
    unexpected.insert(word);
  }
  for (const auto& arg : given) {
    if (unexpected.count(arg) != 0) {
      return arg;
    }
  }
  return extras;
}

// Runs CLI11 on `args` (run mode's options when `run_mode`); returns help
// text when help was asked for.
std::optional<std::string>
run_cli11(CLI::App& app, std::vector<std::string> args, bool run_mode) {
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
    const auto first = first_as_typed(extra, given);
    if (auto advice = run_mode ? flock_option_advice(first) : std::nullopt) {
      throw_usage(*advice);
    }
    throw_usage(
        (first.starts_with('-') ? "unknown option " : "unexpected argument ")
        + quote(first) + std::string(k_try_help));
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

// True when `option` may stand before a subcommand: the options every
// command shares, as add_server_options() and add_output_options() define
// them, and --version.
bool
is_shared_option(const std::string& option) {
  static RawOptions unused;
  static const auto shared = [] {
    auto app = std::make_unique<CLI::App>();
    detail::add_server_options(*app, unused);
    detail::add_output_options(*app, unused);
    detail::add_version_flag(*app, unused);
    return app;
  }();
  return shared->get_option_no_throw(option) != nullptr;
}

// Before a subcommand only the options every command shares may stand; a
// run option there is a mistake, or a NAME meant to equal the subcommand.
void
check_options_before(const CLI::App& app, const Split& split) {
  for (std::size_t i = 0; i < split.options.size(); ++i) {
    const std::string& option = split.options[i];
    if (!is_shared_option(option.substr(0, option.find('=')))) {
      throw_usage(quote(option) + " does not apply to '" + *split.name
                  + "'; to lock a NAME '" + *split.name + "', write rlock "
                  + "[OPTIONS] -- " + *split.name + " COMMAND");
    }
    if (takes_value(app, option)) {
      ++i; // its value
    }
  }
}

} // namespace

std::string
version_text() {
  return "rlock " + std::string(k_version) + "\nhiredis "
         + redis::hiredis_version() + "\nTLS: " + redis::tls_library_version()
         + "\n";
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
    add_command_options(*app, *split.name, raw);
    check_options_before(*app, split);
    throw_if_long_flag_given_value(*app->get_subcommand(*split.name), args);
  }
  throw_if_long_flag_given_value(*app, split.options);
  if (auto help =
          run_cli11(*app, subcommand ? args : split.options, !subcommand)) {
    return InfoRequest{*help};
  }
  if (raw.version) {
    return InfoRequest{version_text()};
  }
  if (subcommand) {
    return find_command(*split.name)->options_of(raw, environment);
  }
  if (!split.name && split.took_last) {
    throw_usage("missing NAME (" + quote(split.options.back())
                + " is the value of " + *split.took_last + ")"
                + std::string(k_try_help));
  }
  if (!split.name) {
    throw_usage("missing NAME" + std::string(k_try_help));
  }
  return run_options_of(raw, *split.name, split.rest, environment);
}

} // namespace rlock::cli
