#include <rlock/cli/check.hpp>
#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/steps.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <CLI/CLI.hpp>

namespace rlock::cli {

namespace {

void
add_options(CLI::App& app, detail::RawOptions& raw) {
  auto& check = raw.check;
  detail::add_step_name(app, check.name);
  detail::add_token_option(app, check.token);
  detail::add_optional(app,
                       "--min-validity",
                       check.min_validity,
                       "succeed only with at least D left ("
                           + defaults::help_text(defaults::k_min_validity)
                           + ")")
      ->type_name("D")
      ->group("Locking");
  detail::add_server_options(app, raw);
  detail::add_output_options(app, raw);
}

ParsedCommand
options_of(const detail::RawOptions& raw, const Environment& environment) {
  const auto& check = raw.check;
  CheckOptions options;
  options.log_level = detail::log_level_of(raw);
  options.server = detail::server_of(raw, environment);
  options.min_validity = detail::duration_or(
      check.min_validity, defaults::k_min_validity, "--min-validity", true);
  options.name = detail::validated_name(check.name);
  options.server.compat =
      detail::step_compat_of(raw, options.server, options.name, environment);
  options.token = detail::token_of(check.token, options.name, environment);
  return options;
}

} // namespace

CommandEntry
check_command() {
  return {"check",
          "tell whether the token still holds the lock",
          "rlock check [--token T] [--min-validity D] NAME",
          "Exit: 0 the token holds the lock with at least --min-validity "
          "left,\n1 otherwise.",
          add_options,
          options_of};
}

int
run(const CheckOptions& options) {
  const auto store = connected_store(options.server, options.log_level);
  const auto left = store->check(options.name, options.token);
  if (!left) {
    log::info(quote(options.name) + " is not held by this token");
    return exit_code::k_failure;
  }
  if (*left < options.min_validity) {
    log::info(quote(options.name) + " is held for only "
              + format_duration(*left));
    return exit_code::k_failure;
  }
  log::info(quote(options.name) + " is held, " + format_duration(*left)
            + " left");
  return exit_code::k_success;
}

} // namespace rlock::cli
