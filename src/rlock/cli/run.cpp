#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/raw_options.hpp>
#include <rlock/cli/run.hpp>
#include <rlock/cli/server.hpp>
#include <rlock/cli/steps.hpp>
#include <rlock/cli/wait_hooks.hpp>
#include <rlock/lock/describe.hpp>
#include <rlock/lock/held_lock.hpp>
#include <rlock/lock/waiter.hpp>
#include <rlock/proc/boot_timer.hpp>
#include <rlock/proc/child.hpp>
#include <rlock/proc/process_info.hpp>
#include <rlock/proc/shell_status.hpp>
#include <rlock/proc/signal_block.hpp>
#include <rlock/proc/signals.hpp>
#include <rlock/proc/termination.hpp>
#include <rlock/proc/tree.hpp>
#include <rlock/proc/watchdog.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/events.hpp>
#include <rlock/util/output.hpp>
#include <rlock/util/random.hpp>
#include <rlock/util/text.hpp>

#include <poll.h>
#include <unistd.h>

#include <array>

namespace rlock::cli {

namespace {

// The child's status as rlock passes it on: a status lost to someone else's
// reaping is a system failure.
int
exit_code_of_status(int status) {
  return status == proc::k_status_unknown ? exit_code::k_os_error : status;
}

// One run once the lock is held.
struct Held {
  const RunOptions& options;
  lock::HeldLock& lock;
  std::optional<lock::Slot> slot; // with --once-per: the slot this run is for
};

struct Supervision {
  int exit_code = 0;
  std::optional<std::string> loss;
};

// Why rlock stops a command whose watchdog died: the lease still holds,
// but should rlock now be stopped or killed, nothing would stop the command
// at the lease's end.
std::string
watchdog_died(pid_t watchdog) {
  return "its watchdog (pid " + std::to_string(watchdog)
         + ") died: nothing would stop the command at the lease's end "
           "should rlock be stopped or killed";
}

std::int64_t
milliseconds(Duration duration) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(duration)
      .count();
}

// How a hold ended.
enum class Ending {
  released, // or kept with --hold
  gone,     // the token no longer held the lock: someone broke or took it
  unknown,  // Redis failed; the lease expires by itself
};

// Says that the lock turned out to be gone when the command ended: the
// command ran at least partly without it.
void
report_gone(const Held& held) {
  const std::string reason =
      "it was no longer held when the command ended (deleted, taken over or "
      "expired)";
  events::emit("lost", held.lock.name(), {{"reason", reason}});
  log::error("lost lock " + quote(held.lock.name()) + ": " + reason);
}

// Says that the release (or --hold's last extension) got no answer in
// time: the command ended inside its lease, so its status stands, and the
// lease runs out by itself.
void
report_unconfirmed(const Held& held,
                   Duration held_for,
                   const std::string& why) {
  const auto& options = held.options;
  const auto& name = held.lock.name();
  events::emit("release-failed",
               name,
               {{"held_ms", milliseconds(held_for)},
                {"error", why},
                {"ttl_ms", milliseconds(options.timing.ttl)}});
  log::warning("could not confirm releasing " + quote(name) + " (" + why
               + "); its lease runs out by itself, at most "
               + format_seconds(options.timing.ttl)
               + " (the TTL) after the server last renewed it");
}

// Releases the lock, or with --hold keeps it until D after it was acquired
// (the key then simply expires). Called once the command ended inside its
// lease, with every step bounded by the lease's end: an answer "not held"
// before that means the lock was taken from us (70), while no answer by
// then only warns: the lease's expiry cleans up.
Ending
end_hold(const Held& held) {
  const auto held_for = boot_now() - held.lock.sent();
  const auto& name = held.lock.name();
  const BootTime lease_end = held.lock.valid_until();
  if (boot_now() >= lease_end) {
    held.lock.release_quietly();
    report_unconfirmed(held, held_for, "the lease ran out first");
    return Ending::unknown;
  }
  held.lock.bound_steps_by(lease_end);
  try {
    if (held.options.hold && held_for < *held.options.hold) {
      const auto keep = *held.options.hold - held_for;
      if (!held.lock.keep_for(keep)) {
        report_gone(held);
        return Ending::gone;
      }
      log::info("keeping " + quote(name) + " for another "
                + format_duration(keep) + " (--hold)");
      events::emit("released",
                   name,
                   {{"held_ms", milliseconds(held_for)},
                    {"expires_in_ms", milliseconds(keep)}});
      return Ending::released;
    }
    if (!held.lock.release()) {
      report_gone(held);
      return Ending::gone;
    }
    log::info("released " + quote(name) + " after "
              + format_duration(held_for));
    events::emit("released", name, {{"held_ms", milliseconds(held_for)}});
    return Ending::released;
  } catch (const Error& e) {
    report_unconfirmed(held, held_for, e.what());
    return Ending::unknown;
  }
}

// --once-per: records a successful run for its slot; a failure only warns.
void
mark_slot(const Held& held) {
  try {
    held.lock.mark_slot_done(*held.slot,
                             held.slot->left + *held.options.once_per);
  } catch (const Error& e) {
    log::warning(std::string("--once-per: ") + e.what()
                 + "; another run may follow in this slot");
  }
}

// The environment entry that marks this run's processes for the watchdog.
// Named after the token, so that a nested run adds its own mark and keeps
// the outer ones: the outer watchdog still finds the inner run's command.
std::string
run_marker(const std::string& token) {
  return "RLOCK_RUN_" + token + "=1";
}

proc::ChildSpec
child_spec(const Held& held, const proc::SignalBlock& signals) {
  proc::ChildSpec spec;
  spec.argv = held.options.command;
  const auto& lock = held.lock;
  spec.environment = {"RLOCK_NAME=" + lock.name(),
                      "RLOCK_KEY=" + lock.key(),
                      "RLOCK_TOKEN=" + lock.token(),
                      "RLOCK_SUPERVISED_TOKEN=" + lock.token(),
                      "RLOCK_FENCE=" + std::to_string(lock.fence()),
                      "RLOCK_COMPAT="
                          + detail::compat_text(held.options.server.compat),
                      run_marker(lock.token())};
  if (lock.slot() >= 0) {
    spec.environment.push_back("RLOCK_SLOT=" + std::to_string(lock.slot()));
  }
  spec.signal_mask = signals.original_mask();
  return spec;
}

// Waits for one of: a signal, news from the renewer, the timer, the death
// of the watchdog (`watchdog_fd`, -1 for none).
void
wait_for_event(const proc::SignalBlock& signals,
               const lock::Renewer& renewer,
               const proc::BootTimer& timer,
               int watchdog_fd) {
  std::array<pollfd, 4> fds{{{signals.fd(), POLLIN, 0},
                             {renewer.wakeup_fd(), POLLIN, 0},
                             {timer.fd(), POLLIN, 0},
                             {watchdog_fd, 0, 0}}};
  ::poll(fds.data(), fds.size(), -1);
  renewer.drain_wakeups();
  timer.drain();
}

// Starts stopping the child after a loss: the kill signal now and SIGKILL
// kill_after later, or SIGKILL at once when the lease may already have
// expired (rlock was stopped or suspended past it). Returns when to SIGKILL.
// `what` heads the line: the lock was lost, or rlock gave it up.
BootTime
stop_child(const proc::Child& child,
           pid_t watchdog,
           const lock::Renewer& renewer,
           const Held& held,
           const std::string& loss,
           const std::string& what) {
  const auto& options = held.options;
  const BootTime now = boot_now();
  const BootTime lease_end =
      renewer.kill_deadline() + options.timing.kill_after;
  const BootTime sigkill_at =
      std::min(now + options.timing.kill_after, lease_end);
  const int signal = now >= lease_end ? SIGKILL : options.kill_signal;
  // Signal first: saying so must not delay it.
  proc::signal_tree(child, watchdog, signal);
  events::emit("lost", held.lock.name(), {{"reason", loss}});
  log::error(what + " " + quote(held.lock.name()) + ": " + loss + "; sent SIG"
             + proc::signal_name(signal) + " to the command");
  return sigkill_at;
}

// Runs until the child exits: forwards signals, and stops the child's group
// when the lease is lost or could expire. The timer runs on CLOCK_BOOTTIME,
// so it fires on time even after a suspend.
Supervision
supervise(proc::Child& child,
          proc::Watchdog& watchdog_process,
          lock::Renewer& renewer,
          const proc::SignalBlock& signals,
          const Held& held) {
  const pid_t watchdog = watchdog_process.pid();
  proc::BootTimer timer;
  Supervision result;
  std::optional<BootTime> sigkill_at;
  bool killed = false;
  bool reap_orphans = false;
  while (true) {
    const auto code = child.shell_status();
    // The loss first: a child that ended after its lease may have run out
    // (killed by the watchdog while rlock was stopped, say) lost the lock.
    if (!result.loss) {
      std::string what = "lost lock";
      result.loss = renewer.check_loss();
      // The watchdog fires at the deadline rlock last gave it: a child that
      // died after it, or by the watchdog's hand, ran out of lease.
      if (!result.loss
          && (watchdog_process.fired()
              || (code && boot_now() >= watchdog_process.deadline()))) {
        result.loss = renewer.give_up(
            "the lease ran out; the command was killed at its end");
      }
      // Without its watchdog the run cannot keep its promise: a command
      // still running is stopped as after a loss. One that ended is done.
      if (!result.loss && !code && !watchdog_process.alive()) {
        result.loss = renewer.give_up(watchdog_died(watchdog));
        what = "gave up lock";
      }
      if (result.loss) {
        sigkill_at =
            stop_child(child, watchdog, renewer, held, *result.loss, what);
      }
    }
    if (code) {
      result.exit_code = *code;
      return result;
    }
    if (reap_orphans) {
      // Orphans handed to us as subreaper must not stay zombies. Not when
      // the child ended: nothing may stand between its end and the release.
      proc::reap_children_except({child.pid(), watchdog});
      reap_orphans = false;
    }
    if (sigkill_at && !killed && boot_now() >= *sigkill_at) {
      proc::signal_tree(child, watchdog, SIGKILL);
      killed = true;
    }
    if (child.resume_pending() && !result.loss) {
      child.resume();
    }
    if (!result.loss) {
      renewer.start_when_due();
      // Should rlock be stopped from here on, the watchdog kills the group
      // at the lease's end on its own.
      watchdog_process.kill_at(renewer.kill_deadline()
                               + held.options.timing.kill_after);
    }
    timer.arm(!result.loss ? std::optional(renewer.next_check())
              : killed     ? std::nullopt
                           : sigkill_at);
    wait_for_event(signals,
                   renewer,
                   timer,
                   result.loss ? -1 : watchdog_process.death_fd());
    while (const int signal = signals.take()) {
      if (signal == SIGCHLD) {
        reap_orphans = true;
      } else {
        // As is: a job someone paused stays paused (timeout(1) continues
        // only with its own kill signal).
        child.signal_group(signal);
      }
    }
  }
}

// Ends the watchdog. Should it have fired meanwhile, it may have been ended
// halfway, with processes stopped but not yet killed: finish its work.
void
disarm_watchdog(proc::Watchdog& watchdog) {
  watchdog.disarm();
  if (watchdog.fired()) {
    proc::kill_descendants();
  }
}

// The lease ran out between the acquire and the exec (a slow reply, rlock
// stopped or the machine asleep): the command is not run at all.
int
lease_ran_out_before_start(const Held& held) {
  const std::string reason = "the lease ran out before the command started";
  events::emit("lost", held.lock.name(), {{"reason", reason}});
  log::error("lost lock " + quote(held.lock.name()) + ": " + reason
             + "; it was not run");
  held.lock.release_quietly();
  return exit_code::k_lock_lost;
}

// Stops the renewer on the way out of run_held(), whichever way: before the
// output it writes through stops being deferred.
class RenewingScope {
public:
  explicit RenewingScope(lock::HeldLock& lock) : m_lock(lock) {
  }
  ~RenewingScope() {
    m_lock.stop_renewing();
  }
  RenewingScope(const RenewingScope&) = delete;
  RenewingScope& operator=(const RenewingScope&) = delete;

private:
  lock::HeldLock& m_lock;
};

// Starts the watchdog for the run of `token`, to fire at `kill_at`: it knows
// the run's processes by rlock's tree and the token in their environment,
// and by their group once it exists.
proc::Watchdog
start_watchdog(const std::string& token, BootTime kill_at) {
  return proc::Watchdog::start({0, run_marker(token)}, kill_at);
}

// A waiter starts its watchdog before the lock is free, so that a handoff
// pays one fork less. Until the lock is held it has nothing to guard: its
// deadline is one it never reaches, set when the lock is taken. A failure
// is left to the run, which starts one then.
void
prepare_watchdog(std::optional<proc::Watchdog>& watchdog,
                 const std::string& token) {
  try {
    watchdog.emplace(
        start_watchdog(token, boot_now() + std::chrono::hours(24 * 3650)));
  } catch (const Error&) {
  }
}

int
run_held(const Held& held,
         const proc::SignalBlock& signals,
         std::optional<proc::Watchdog>& prepared) {
  const auto& options = held.options;
  auto& lock = held.lock;
  std::optional<proc::Child> child;
  // Orphaned descendants come to us rather than to init, so that a lost lock
  // can reach them.
  proc::become_subreaper();
  // Armed before the command starts.
  const BootTime kill_at = options.timing.valid_until(lock.lease_start());
  if (prepared && !prepared->alive()) {
    // A waiter's watchdog killed while it waited: still one thread, so a
    // new one can be forked.
    prepared.reset();
  }
  if (!prepared) {
    prepared.emplace(start_watchdog(lock.token(), kill_at));
  }
  proc::Watchdog& watchdog = *prepared;
  watchdog.kill_at(kill_at);
  // The last moment to check that the command may still start.
  if (boot_now() >= lock.kill_deadline()) {
    disarm_watchdog(watchdog);
    return lease_ran_out_before_start(held);
  }
  try {
    child.emplace(proc::Child::spawn(child_spec(held, signals)));
  } catch (const Error&) {
    disarm_watchdog(watchdog);
    end_hold(held);
    throw;
  }
  watchdog.watch_group(child->pid());
  // From here on no output may block the renewals or the kill path. After
  // the watchdog's fork: that child must not inherit a second thread.
  const output::Deferred deferred_output;
  const RenewingScope renewing(lock);
  auto& renewer = lock.start_renewing(password_source_of(held.options.server));
  const auto result = supervise(*child, watchdog, renewer, signals, held);
  // The command is over: no renewal starts after its end. One under way may
  // still land; it reports nothing.
  renewer.request_stop();
  if (result.loss) {
    proc::signal_tree(*child, watchdog.pid(), SIGKILL);
  }
  // Whatever the command left running in its group dies before the release.
  const int exit_code = exit_code_of_status(child->finish());
  if (result.loss) {
    lock.stop_renewing();
    disarm_watchdog(watchdog);
    // Gone already, or expiring unrenewed: either way let the next holder in.
    lock.release_quietly();
    return exit_code::k_lock_lost;
  }
  if (held.slot && exit_code == exit_code::k_success) {
    mark_slot(held);
  }
  // The next holder waits on the release, not on our teardown: release
  // first. A renewal racing the release finds the token gone and changes
  // nothing, but one racing --hold's last extension would replace it.
  if (options.hold) {
    lock.stop_renewing();
  }
  const Ending ending = end_hold(held);
  lock.stop_renewing();
  disarm_watchdog(watchdog);
  if (ending == Ending::gone) {
    return exit_code::k_lock_lost;
  }
  if (const int signal = child->termination_signal()) {
    proc::end_by_signal(signal);
  }
  return exit_code;
}

// -n fails silently, as flock does (cron mails any output), unless the
// restart grace refused it: nobody holds the lock, so that is said (not
// with -q); a -w that ran out says so, for the CI log.
void
report_not_acquired(const std::string& name,
                    const std::optional<Duration>& wait,
                    std::int64_t limit,
                    const lock::Busy& busy) {
  const bool held_back = !busy.held_back.empty();
  const std::string why =
      held_back
          ? busy.held_back
          : lock::held_by_text(busy, false)
                + lock::queued_first_text(busy, limit == lock::k_shared_limit);
  if (wait && *wait > Duration::zero()) {
    log::notice("gave up waiting for " + quote(name) + " after "
                + format_duration(*wait) + "; " + why);
  } else {
    (held_back ? log::notice : log::info)("not acquired: " + quote(name)
                                          + (held_back ? ": " : " is ") + why);
  }
}

lock::Holder
holder_of(const RunOptions& options) {
  return lock::Holder{proc::host_name(),
                      getpid(),
                      proc::user_name(),
                      shell_join(options.command)};
}

} // namespace

int
run(const RunOptions& options) {
  log::set_level(options.log_level);
  try {
    events::open(options.events_path);
  } catch (const Error& e) {
    throw Error(e.kind(), std::string("--events: ") + e.what());
  }
  const BootTime started = boot_now();
  std::vector<int> delivered(k_forwarded_signals.begin(),
                             k_forwarded_signals.end());
  delivered.push_back(SIGCHLD);
  const proc::SignalBlock signals(delivered, {SIGPIPE, SIGTTOU, SIGTTIN});
  const auto store = store_for(options.server);
  connect_for_waiting(*store, options.waiting);
  const lock::LockRequest request{options.name,
                                  random_token(),
                                  options.timing.ttl,
                                  holder_of(options),
                                  options.limit,
                                  options.parent_token};
  std::optional<proc::Watchdog> watchdog;
  const auto outcome = acquire_or_undo(
      *store, request, wait_options_of(options.waiting), signals, [&] {
        prepare_watchdog(watchdog, request.token);
      });
  refuse_if_impossible(
      options.name, outcome.attempt, options.limit, "this run");
  using Kind = lock::WaitOutcome::Kind;
  if (outcome.kind == Kind::interrupted) {
    return interrupted_by(outcome.signal);
  }
  if (outcome.kind == Kind::timed_out) {
    report_not_acquired(options.name,
                        options.waiting.wait,
                        options.limit,
                        std::get<lock::Busy>(outcome.attempt));
    return options.waiting.conflict_exit_code;
  }
  const auto& granted = std::get<lock::Granted>(outcome.attempt);
  lock::HeldLock lock(*store, request, granted, options.timing);
  Held held{options, lock, std::nullopt};
  const auto slot = granted.slot;
  log::info("acquired " + quote(options.name) + " (fence "
            + std::to_string(granted.fence)
            + (slot >= 0 ? ", slot " + std::to_string(slot) : "") + ")");
  nlohmann::ordered_json fields{
      {"fence", granted.fence},
      {"waited_ms", milliseconds(granted.sent - started)},
      {"replicas", granted.replicas}};
  if (slot >= 0) {
    fields["slot"] = slot;
  }
  if (granted.servers > 0) {
    fields["granted"] = granted.granted;
    fields["servers"] = granted.servers;
  }
  events::emit("acquired", options.name, fields);
  if (const int signal = take_terminating(signals)) {
    end_hold(held);
    return interrupted_by(signal);
  }
  if (options.once_per) {
    try {
      held.slot = lock.current_slot(*options.once_per);
    } catch (const Error& e) {
      end_hold(held);
      throw Error(e.kind(), std::string("--once-per: ") + e.what());
    }
    if (held.slot->done) {
      log::info(quote(options.name) + " already ran in this --once-per slot");
      end_hold(held);
      return options.waiting.conflict_exit_code;
    }
  }
  try {
    return run_held(held, signals, watchdog);
  } catch (...) {
    // Whatever went wrong, the lock must not wait out its lease.
    lock.stop_renewing();
    lock.release_quietly();
    throw;
  }
}

} // namespace rlock::cli
