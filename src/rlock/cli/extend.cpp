#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/extend.hpp>
#include <rlock/cli/steps.hpp>
#include <rlock/util/error.hpp>

#include <CLI/CLI.hpp>

namespace rlock::cli {

namespace {

void
add_options(CLI::App& app, detail::RawOptions& raw) {
  auto& extend = raw.extend;
  detail::add_step_name(app, extend.name);
  detail::add_optional(app,
                       "-t,--ttl",
                       extend.length,
                       "new lease length (the one it was taken with)")
      ->type_name("D")
      ->group("Locking");
  detail::add_token_option(app, extend.token);
  detail::add_server_options(app, raw);
  detail::add_output_options(app, raw);
}

ParsedCommand
options_of(const detail::RawOptions& raw, const Environment& environment) {
  const auto& extend = raw.extend;
  ExtendOptions options;
  options.log_level = detail::log_level_of(raw);
  options.server = detail::server_of(raw, environment);
  options.length = detail::optional_duration_of(extend.length, "--ttl", false);
  options.name = detail::validated_name(extend.name);
  options.server.compat =
      detail::step_compat_of(raw, options.server, options.name, environment);
  if (options.server.compat.style != lock::LockStyle::rlock
      && !options.length) {
    throw_usage("--compat " + detail::compat_text(options.server.compat)
                + ": extend needs -t/--ttl: the application's key records no "
                  "lease length");
  }
  options.token = detail::token_of(extend.token, options.name, environment);
  return options;
}

} // namespace

CommandEntry
extend_command() {
  return {"extend",
          "extend a lock taken with acquire",
          "rlock extend [--token T] [-t D] NAME",
          "Exit: 0 extended, 1 not held by that token, 69 Redis unavailable\n"
          "(or, with --replicas, too few replicas confirmed it).",
          add_options,
          options_of};
}

int
run(const ExtendOptions& options) {
  const auto store = connected_store(options.server, options.log_level);
  // Never shortens: the lease may be one a supervising rlock counts on.
  const auto renewal = store->renew(options.name,
                                    options.token,
                                    options.length.value_or(Duration::zero()),
                                    lock::RenewMode::at_least);
  return renewal.held ? exit_code::k_success : not_held(*store, options.name);
}

} // namespace rlock::cli
