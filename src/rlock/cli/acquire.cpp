#include <rlock/cli/acquire.hpp>
#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/raw_options.hpp>
#include <rlock/cli/steps.hpp>
#include <rlock/cli/wait_hooks.hpp>
#include <rlock/lock/describe.hpp>
#include <rlock/proc/process_info.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/random.hpp>
#include <rlock/util/text.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>

namespace rlock::cli {

namespace {

using Output = AcquireOptions::Output;

void
add_options(CLI::App& app, detail::RawOptions& raw) {
  auto& acquire = raw.acquire;
  detail::add_step_name(app, acquire.name);
  detail::add_optional(app,
                       "-t,--ttl",
                       acquire.ttl,
                       "lease length, not renewed ("
                           + defaults::help_text(defaults::k_acquire_ttl) + ")")
      ->type_name("D")
      ->group("Locking");
  detail::add_optional(app,
                       "--limit",
                       acquire.limit,
                       "a semaphore: at most N holders at once (slot printed)")
      ->type_name("N")
      ->group("Locking");
  app.add_flag("-s,--shared",
               acquire.shared,
               "a shared (read) lock: shared holders together, a plain one "
               "alone")
      ->group("Locking");
  detail::add_wait_options(app, raw, true);
  app.add_flag(
         "--json", acquire.json, "print {name, key, token, fence, ttl_ms}")
      ->group("Output");
  app.add_flag("--env", acquire.env, "print RLOCK_* assignments for eval")
      ->group("Output");
  detail::add_server_options(app, raw);
  detail::add_output_options(app, raw);
}

ParsedCommand
options_of(const detail::RawOptions& raw, const Environment& environment) {
  const auto& acquire = raw.acquire;
  AcquireOptions options;
  options.log_level = detail::log_level_of(raw);
  options.server = detail::server_of(raw, environment);
  options.server.restart_grace = detail::restart_grace_of(raw, environment);
  options.waiting = detail::waiting_of(raw);
  if (acquire.json && acquire.env) {
    throw_usage("--json and --env exclude each other");
  }
  options.output = acquire.json  ? Output::json
                   : acquire.env ? Output::env
                                 : Output::token;
  options.ttl =
      detail::duration_or(acquire.ttl, defaults::k_acquire_ttl, "--ttl", false);
  options.limit =
      detail::limit_of(acquire.limit, acquire.shared, options.server);
  options.name = detail::validated_name(acquire.name);
  options.parent_token =
      detail::parent_token_of(options.limit, options.name, environment);
  return options;
}

// A lock taken by `rlock acquire` belongs to the script that ran it.
lock::Holder
calling_script() {
  const pid_t parent = getppid();
  return lock::Holder{proc::host_name(),
                      parent,
                      proc::user_name(),
                      shell_join(proc::command_line_of(parent))};
}

// A semaphore's holder also gets its slot: `slot` in --json, RLOCK_SLOT in
// --env (-1: a plain lock, neither).
std::string
output_of(const AcquireOptions& options,
          const std::string& key,
          const std::string& token,
          std::int64_t fence,
          std::int64_t slot) {
  const std::string& name = options.name;
  switch (options.output) {
  case Output::json: {
    nlohmann::ordered_json json{
        {"name", name},
        {"key", key},
        {"token", token},
        {"fence", fence},
        {"ttl_ms",
         std::chrono::duration_cast<std::chrono::milliseconds>(options.ttl)
             .count()}};
    if (slot >= 0) {
      json["slot"] = slot;
    }
    return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
           + "\n";
  }
  case Output::env:
    if (slot >= 0) {
      return "RLOCK_NAME=" + shell_join({name}) + "\nRLOCK_KEY="
             + shell_join({key}) + "\nRLOCK_TOKEN=" + token + "\nRLOCK_FENCE="
             + std::to_string(fence) + "\nRLOCK_SLOT=" + std::to_string(slot)
             + "\nexport RLOCK_NAME RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE "
               "RLOCK_SLOT\n";
    }
    // RLOCK_COMPAT always: the one a former eval left must not stay
    // beside another lock's RLOCK_NAME.
    return "RLOCK_NAME=" + shell_join({name})
           + "\nRLOCK_KEY=" + shell_join({key}) + "\nRLOCK_TOKEN=" + token
           + "\nRLOCK_FENCE=" + std::to_string(fence) + "\nRLOCK_COMPAT="
           + shell_join({detail::compat_text(options.server.compat)})
           + "\nexport RLOCK_NAME RLOCK_KEY RLOCK_TOKEN RLOCK_FENCE "
             "RLOCK_COMPAT\n";
  case Output::token:
    break;
  }
  return token + "\n";
}

void
report_not_acquired(const AcquireOptions& options, const lock::Busy& busy) {
  const auto& held_back = busy.held_back;
  const auto& wait = options.waiting.wait;
  if (wait && *wait > Duration::zero()) {
    log::notice("gave up waiting for " + quote(options.name) + " after "
                + format_duration(*wait) + "; "
                + (held_back.empty()
                       ? lock::held_by_text(busy, false)
                             + lock::queued_first_text(
                                 busy, options.limit == lock::k_shared_limit)
                       : held_back));
  } else if (!held_back.empty()) {
    // Nobody holds it: said without -v (not with -q), as for a run.
    log::notice("not acquired: " + quote(options.name) + ": " + held_back);
  }
}

} // namespace

CommandEntry
acquire_command() {
  return {"acquire",
          "take the lock for a script; print the token",
          "rlock acquire [-n|-w D] [-t D] [--fair] [--limit N|--shared] "
          "[--json|--env] NAME",
          "Exit: 0 acquired (token on stdout), "
              + std::to_string(defaults::k_conflict_exit_code)
              + " not acquired (-E), 69 Redis\n"
                "unavailable. Example: eval \"$(rlock acquire --env NAME)\"",
          add_options,
          options_of};
}

int
run(const AcquireOptions& options) {
  const auto store =
      waiting_store(options.server, options.waiting, options.log_level);
  const proc::SignalBlock signals(
      {k_forwarded_signals.begin(), k_forwarded_signals.end()}, {SIGPIPE});
  const lock::LockRequest request{options.name,
                                  random_token(),
                                  options.ttl,
                                  calling_script(),
                                  options.limit,
                                  options.parent_token};
  const auto outcome = acquire_or_undo(
      *store, request, wait_options_of(options.waiting), signals);
  refuse_if_impossible(
      options.name, outcome.attempt, options.limit, "this acquire");
  using Kind = lock::WaitOutcome::Kind;
  if (outcome.kind == Kind::interrupted) {
    return interrupted_by(outcome.signal);
  }
  if (outcome.kind == Kind::timed_out) {
    report_not_acquired(options, std::get<lock::Busy>(outcome.attempt));
    return options.waiting.conflict_exit_code;
  }
  const auto& granted = std::get<lock::Granted>(outcome.attempt);
  log::info("acquired " + quote(options.name) + " (fence "
            + std::to_string(granted.fence) + ") for "
            + format_duration(options.ttl));
  const auto text = output_of(options,
                              store->key_of(options.name),
                              request.token,
                              granted.fence,
                              granted.slot);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (std::fflush(stdout) != 0) {
    // Nobody would know the token: give the lock back.
    store->release(options.name, request.token);
  }
  return exit_code::k_success;
}

} // namespace rlock::cli
