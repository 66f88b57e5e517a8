#include <rlock/cli/step.hpp>
#include <rlock/cli/wait_hooks.hpp>
#include <rlock/lock/protocol.hpp>
#include <rlock/proc/process_info.hpp>
#include <rlock/proc/termination.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/exit_codes.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/random.hpp>
#include <rlock/util/text.hpp>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace rlock::cli {

namespace {

using Action = StepOptions::Action;
using lock::LockKeys;

// A lock taken by `rlock acquire` belongs to the script that ran it.
lock::Holder
calling_script() {
  const pid_t parent = getppid();
  return lock::Holder{proc::host_name(),
                      parent,
                      proc::user_name(),
                      shell_join(proc::command_line_of(parent))};
}

std::string
output_of(const StepOptions& options,
          const LockKeys& keys,
          const std::string& token,
          std::int64_t fence) {
  switch (options.output) {
  case StepOptions::Output::json:
    return nlohmann::ordered_json{
               {"name", keys.name},
               {"key", keys.lock},
               {"token", token},
               {"fence", fence},
               {"ttl_ms",
                std::chrono::duration_cast<std::chrono::milliseconds>(
                    options.ttl)
                    .count()}}
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
           + "\n";
  case StepOptions::Output::env:
    return "RLOCK_NAME=" + shell_join({keys.name})
           + "\nRLOCK_KEY=" + shell_join({keys.lock}) + "\nRLOCK_TOKEN=" + token
           + "\nRLOCK_FENCE=" + std::to_string(fence)
           + "\nexport RLOCK_NAME RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE\n";
  case StepOptions::Output::token:
    break;
  }
  return token + "\n";
}

int
acquire(const StepOptions& options,
        redis::Connection& connection,
        const LockKeys& keys) {
  const proc::SignalBlock signals(
      {k_forwarded_signals.begin(), k_forwarded_signals.end()}, {SIGPIPE});
  const auto token = random_token();
  const auto outcome = acquire_or_undo(
      connection,
      LockWait{options.server,
               keys,
               token,
               options.ttl,
               calling_script(),
               lock::WaitOptions{options.nonblock, options.wait, options.fair}},
      signals);
  using Kind = lock::WaitOutcome::Kind;
  if (outcome.kind == Kind::interrupted) {
    proc::end_by_signal(outcome.signal);
    return exit_code::k_signal_base + outcome.signal;
  }
  if (outcome.kind == Kind::timed_out) {
    if (options.wait && *options.wait > Duration::zero()) {
      log::notice("gave up waiting for " + quote(keys.name) + " after "
                  + format_duration(*options.wait) + "; held by "
                  + printable(outcome.attempt.holder));
    }
    return options.conflict_exit_code;
  }
  log::info("acquired " + quote(keys.name) + " (fence "
            + std::to_string(outcome.attempt.fence) + ") for "
            + format_duration(options.ttl));
  const auto text = output_of(options, keys, token, outcome.attempt.fence);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (std::fflush(stdout) != 0) {
    // Nobody would know the token: give the lock back.
    lock::release(connection, keys, token);
  }
  return exit_code::k_success;
}

int
not_held(const LockKeys& keys) {
  log::warning("lock " + quote(keys.name) + " is not held by this token");
  return exit_code::k_failure;
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
release(const StepOptions& options,
        redis::Connection& connection,
        const LockKeys& keys) {
  if (!options.force && supervised_token(options.token)) {
    throw Error(exit_code::k_usage,
                "release: lock " + quote(keys.name)
                    + " is held by the rlock running this command, which "
                      "releases it when the command ends");
  }
  if (!options.force) {
    return lock::release(connection, keys, options.token) ? exit_code::k_success
                                                          : not_held(keys);
  }
  const auto broken = lock::force_release(connection, keys);
  if (!broken) {
    log::warning("lock " + quote(keys.name) + " was not held");
    return exit_code::k_failure;
  }
  log::error("broke lock " + quote(keys.name) + " held by "
             + printable(broken->holder) + " (" + printable(broken->command)
             + ")");
  return exit_code::k_success;
}

int
check(const StepOptions& options,
      redis::Connection& connection,
      const LockKeys& keys) {
  const auto left = lock::check(connection, keys, options.token);
  if (!left) {
    log::info(quote(keys.name) + " is not held by this token");
    return exit_code::k_failure;
  }
  if (*left < options.min_validity) {
    log::info(quote(keys.name) + " is held for only " + format_duration(*left));
    return exit_code::k_failure;
  }
  log::info(quote(keys.name) + " is held, " + format_duration(*left) + " left");
  return exit_code::k_success;
}

int
wait_until_free(const StepOptions& options,
                redis::Connection& connection,
                const LockKeys& keys) {
  const proc::SignalBlock signals(
      {k_forwarded_signals.begin(), k_forwarded_signals.end()}, {SIGPIPE});
  const auto outcome = lock::wait_until_free(
      connection,
      keys,
      lock::WaitOptions{false, options.wait, false},
      make_wait_hooks(options.server, signals, connection));
  using Kind = lock::WaitOutcome::Kind;
  if (outcome.kind == Kind::interrupted) {
    proc::end_by_signal(outcome.signal);
    return exit_code::k_signal_base + outcome.signal;
  }
  return outcome.kind == Kind::acquired ? exit_code::k_success
                                        : options.conflict_exit_code;
}

} // namespace

int
run_step(const StepOptions& options) {
  log::set_level(options.log_level);
  auto connection =
      redis::Connection::open(options.server.endpoint, options.server.connect);
  const auto keys = lock::keys_for(options.server.prefix, options.name);
  switch (options.action) {
  case Action::acquire:
    return acquire(options, connection, keys);
  case Action::extend:
    // Never shortens: the lease may be one a supervising rlock counts on.
    return lock::renew(connection,
                       keys,
                       options.token,
                       options.ttl,
                       lock::RenewMode::at_least)
                   .held
               ? exit_code::k_success
               : not_held(keys);
  case Action::release:
    return release(options, connection, keys);
  case Action::check:
    return check(options, connection, keys);
  case Action::wait:
    return wait_until_free(options, connection, keys);
  }
  return exit_code::k_usage;
}

} // namespace rlock::cli
