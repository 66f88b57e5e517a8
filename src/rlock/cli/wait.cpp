#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/steps.hpp>
#include <rlock/cli/wait.hpp>
#include <rlock/cli/wait_hooks.hpp>

#include <CLI/CLI.hpp>

namespace rlock::cli {

namespace {

void
add_options(CLI::App& app, detail::RawOptions& raw) {
  detail::add_step_name(app, raw.wait_free.name);
  detail::add_wait_options(app, raw, false);
  detail::add_server_options(app, raw);
  detail::add_output_options(app, raw);
}

ParsedCommand
options_of(const detail::RawOptions& raw, const Environment& environment) {
  WaitFreeOptions options;
  options.log_level = detail::log_level_of(raw);
  options.server = detail::server_of(raw, environment);
  options.server.restart_grace = detail::restart_grace_of(raw, environment);
  options.waiting = detail::waiting_of(raw);
  options.name = detail::validated_name(raw.wait_free.name);
  return options;
}

} // namespace

CommandEntry
wait_command() {
  return {"wait",
          "wait until the lock is free, without taking it",
          "rlock wait [-w D] NAME",
          "Exit: 0 the lock is free, "
              + std::to_string(defaults::k_conflict_exit_code)
              + " -w ran out (-E).",
          add_options,
          options_of};
}

int
run(const WaitFreeOptions& options) {
  const auto store =
      waiting_store(options.server, options.waiting, options.log_level);
  const proc::SignalBlock signals(
      {k_forwarded_signals.begin(), k_forwarded_signals.end()}, {SIGPIPE});
  const auto outcome = lock::wait_until_free(
      *store,
      options.name,
      lock::WaitOptions{false, options.waiting.wait, false},
      make_wait_hooks(signals));
  using Kind = lock::FreeWaitOutcome::Kind;
  if (outcome.kind == Kind::interrupted) {
    return interrupted_by(outcome.signal);
  }
  return outcome.kind == Kind::free ? exit_code::k_success
                                    : options.waiting.conflict_exit_code;
}

} // namespace rlock::cli
