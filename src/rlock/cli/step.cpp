#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/server.hpp>
#include <rlock/cli/step.hpp>
#include <rlock/cli/wait_hooks.hpp>
#include <rlock/lock/store.hpp>
#include <rlock/proc/process_info.hpp>
#include <rlock/proc/termination.hpp>
#include <rlock/util/error.hpp>
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
using lock::LockStore;

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
          const std::string& key,
          const std::string& token,
          std::int64_t fence) {
  const std::string& name = options.name;
  switch (options.output) {
  case StepOptions::Output::json:
    return nlohmann::ordered_json{
               {"name", name},
               {"key", key},
               {"token", token},
               {"fence", fence},
               {"ttl_ms",
                std::chrono::duration_cast<std::chrono::milliseconds>(
                    options.ttl)
                    .count()}}
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
           + "\n";
  case StepOptions::Output::env:
    return "RLOCK_NAME=" + shell_join({name})
           + "\nRLOCK_KEY=" + shell_join({key}) + "\nRLOCK_TOKEN=" + token
           + "\nRLOCK_FENCE=" + std::to_string(fence)
           + "\nexport RLOCK_NAME RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE\n";
  case StepOptions::Output::token:
    break;
  }
  return token + "\n";
}

int
acquire(const StepOptions& options, LockStore& store) {
  const proc::SignalBlock signals(
      {k_forwarded_signals.begin(), k_forwarded_signals.end()}, {SIGPIPE});
  const lock::LockRequest request{
      options.name, random_token(), options.ttl, calling_script()};
  const auto& token = request.token;
  const auto outcome = acquire_or_undo(
      store,
      request,
      lock::WaitOptions{options.nonblock, options.wait, options.fair},
      signals);
  using Kind = lock::WaitOutcome::Kind;
  if (outcome.kind == Kind::interrupted) {
    proc::end_by_signal(outcome.signal);
    return exit_code::k_signal_base + outcome.signal;
  }
  if (outcome.kind == Kind::timed_out) {
    const auto& held_back = outcome.attempt.held_back;
    if (options.wait && *options.wait > Duration::zero()) {
      log::notice("gave up waiting for " + quote(options.name) + " after "
                  + format_duration(*options.wait) + "; "
                  + (held_back.empty()
                         ? "held by " + printable(outcome.attempt.holder)
                         : held_back));
    } else if (!held_back.empty()) {
      log::info("not acquired: " + quote(options.name) + ": " + held_back);
    }
    return options.conflict_exit_code;
  }
  log::info("acquired " + quote(options.name) + " (fence "
            + std::to_string(outcome.attempt.fence) + ") for "
            + format_duration(options.ttl));
  const auto text = output_of(
      options, store.key_of(options.name), token, outcome.attempt.fence);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (std::fflush(stdout) != 0) {
    // Nobody would know the token: give the lock back.
    store.release(options.name, token);
  }
  return exit_code::k_success;
}

int
not_held(const std::string& name) {
  log::warning("lock " + quote(name) + " is not held by this token");
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
release(const StepOptions& options, LockStore& store) {
  if (!options.force && supervised_token(options.token)) {
    throw Error(ErrorKind::bad_input,
                "release: lock " + quote(options.name)
                    + " is held by the rlock running this command, which "
                      "releases it when the command ends");
  }
  if (!options.force) {
    return store.release(options.name, options.token) ? exit_code::k_success
                                                      : not_held(options.name);
  }
  const auto broken = store.force_release(options.name);
  if (!broken) {
    log::warning("lock " + quote(options.name) + " was not held");
    return exit_code::k_failure;
  }
  log::error("broke lock " + quote(options.name) + " held by "
             + printable(broken->holder) + " (" + printable(broken->command)
             + ")");
  return exit_code::k_success;
}

int
check(const StepOptions& options, LockStore& store) {
  const auto left = store.check(options.name, options.token);
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

int
wait_until_free(const StepOptions& options, LockStore& store) {
  const proc::SignalBlock signals(
      {k_forwarded_signals.begin(), k_forwarded_signals.end()}, {SIGPIPE});
  const auto outcome =
      lock::wait_until_free(store,
                            options.name,
                            lock::WaitOptions{false, options.wait, false},
                            make_wait_hooks(signals));
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
  const auto store = open_store(options.server);
  store->connect();
  switch (options.action) {
  case Action::acquire:
    return acquire(options, *store);
  case Action::extend:
    // Never shortens: the lease may be one a supervising rlock counts on.
    return store->renew(options.name,
                        options.token,
                        options.ttl,
                        lock::RenewMode::at_least)
                   .held
               ? exit_code::k_success
               : not_held(options.name);
  case Action::release:
    return release(options, *store);
  case Action::check:
    return check(options, *store);
  case Action::wait:
    return wait_until_free(options, *store);
  }
  return exit_code::k_usage;
}

} // namespace rlock::cli
