#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/release.hpp>
#include <rlock/cli/steps.hpp>
#include <rlock/lock/describe.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <CLI/CLI.hpp>

#include <cstdlib>

namespace rlock::cli {

namespace {

void
add_options(CLI::App& app, detail::RawOptions& raw) {
  auto& release = raw.release;
  detail::add_step_name(app, release.name);
  detail::add_token_option(app, release.token);
  app.add_flag("--force", release.force, "break the lock, whoever holds it")
      ->group("Locking");
  detail::add_server_options(app, raw);
  detail::add_output_options(app, raw);
}

ParsedCommand
options_of(const detail::RawOptions& raw, const Environment& environment) {
  const auto& release = raw.release;
  if (release.force && !release.token.empty()) {
    throw_usage("--force and --token exclude each other");
  }
  ReleaseOptions options;
  options.log_level = detail::log_level_of(raw);
  options.server = detail::server_of(raw, environment);
  options.force = release.force;
  options.name = detail::validated_name(release.name);
  options.server.compat =
      detail::step_compat_of(raw, options.server, options.name, environment);
  if (!options.force) {
    options.token = detail::token_of(release.token, options.name, environment);
  }
  return options;
}

// True when `token` is the one of the lock whose supervising `rlock NAME
// COMMAND` started this process (or an ancestor): that rlock releases it
// when its command ends, and counts on the lease until then.
bool
supervised_token(const std::string& token) {
  const char* supervised = std::getenv("RLOCK_SUPERVISED_TOKEN");
  return supervised != nullptr && token == supervised;
}

int
force_release(const ReleaseOptions& options, lock::LockSteps& store) {
  const auto broken = store.force_release(options.name);
  if (!broken) {
    log::warning("lock " + quote(options.name) + " was not held");
    return exit_code::k_failure;
  }
  log::error("broke lock " + quote(options.name) + " "
             + lock::held_by_text(*broken));
  return exit_code::k_success;
}

} // namespace

CommandEntry
release_command() {
  return {"release",
          "release a lock taken with acquire",
          "rlock release [--token T | --force] NAME",
          "Exit: 0 released, 1 not held by that token (or free, with --force).",
          add_options,
          options_of};
}

int
run(const ReleaseOptions& options) {
  const auto store = connected_store(options.server, options.log_level);
  if (options.force) {
    return force_release(options, *store);
  }
  if (supervised_token(options.token)) {
    throw Error(ErrorKind::bad_input,
                "release: lock " + quote(options.name)
                    + " is held by the rlock running this command, which "
                      "releases it when the command ends");
  }
  return store->release(options.name, options.token)
             ? exit_code::k_success
             : not_held(*store, options.name);
}

} // namespace rlock::cli
