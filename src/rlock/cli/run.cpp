#include <rlock/cli/run.hpp>
#include <rlock/cli/wait_hooks.hpp>
#include <rlock/lock/protocol.hpp>
#include <rlock/lock/renewer.hpp>
#include <rlock/lock/waiter.hpp>
#include <rlock/proc/child.hpp>
#include <rlock/proc/signal_block.hpp>
#include <rlock/proc/signals.hpp>
#include <rlock/proc/watchdog.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/events.hpp>
#include <rlock/util/exit_codes.hpp>
#include <rlock/util/random.hpp>
#include <rlock/util/text.hpp>

#include <poll.h>
#include <pwd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <array>
#include <climits>

namespace rlock::cli {

namespace {

using lock::LockKeys;

// Everything one run needs once the lock is held.
struct Held {
  const RunOptions& options;
  LockKeys keys;
  std::string token;
  lock::AcquireAttempt acquired;
  std::optional<redis::Connection>& connection;
  std::optional<lock::Slot> slot; // with --once-per: the slot this run is for
};

struct Supervision {
  int exit_code = 0;
  std::optional<std::string> loss;
};

std::string
host_name() {
  std::array<char, HOST_NAME_MAX + 1> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) {
    return "?";
  }
  return name.data();
}

std::string
user_name() {
  std::array<char, 4096> buffer{};
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(geteuid(), &entry, buffer.data(), buffer.size(), &found) == 0
      && found != nullptr) {
    return found->pw_name;
  }
  return std::to_string(geteuid());
}

// Runs `step` on the main connection, reconnecting once when it has gone
// stale while the command ran.
template <typename Step>
auto
on_connection(const Held& held, Step&& step) {
  for (int attempt = 0;; ++attempt) {
    try {
      if (!held.connection) {
        held.connection.emplace(redis::Connection::open(
            held.options.server.endpoint, held.options.server.connect));
      }
      return step(*held.connection);
    } catch (const Error&) {
      held.connection.reset();
      if (attempt > 0) {
        throw;
      }
    }
  }
}

std::int64_t
milliseconds(Duration duration) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(duration)
      .count();
}

// Releases the lock, or with --hold keeps it until D after it was acquired
// (the key then simply expires). A failure only warns: the lease's expiry
// cleans up.
void
end_hold(const Held& held) {
  const auto held_for = boot_now() - held.acquired.sent;
  const auto& name = held.keys.name;
  try {
    if (held.options.hold && held_for < *held.options.hold) {
      const auto keep = *held.options.hold - held_for;
      on_connection(held, [&](redis::Connection& c) {
        return lock::renew(c, held.keys, held.token, keep);
      });
      log::info("keeping " + quote(name) + " for another "
                + format_duration(keep) + " (--hold)");
      events::emit("released",
                   name,
                   {{"held_ms", milliseconds(held_for)},
                    {"expires_in_ms", milliseconds(keep)}});
      return;
    }
    if (on_connection(held, [&](redis::Connection& c) {
          return lock::release(c, held.keys, held.token);
        })) {
      log::info("released " + quote(name) + " after "
                + format_duration(held_for));
      events::emit("released", name, {{"held_ms", milliseconds(held_for)}});
    } else {
      log::warning("lock " + quote(name) + " was no longer held at release");
    }
  } catch (const Error& e) {
    log::warning(std::string(e.what()) + "; lock " + quote(name)
                 + " expires by itself within "
                 + format_duration(held.options.timing.ttl));
  }
}

// --once-per: records a successful run for its slot; a failure only warns.
void
mark_slot(const Held& held) {
  try {
    on_connection(held, [&](redis::Connection& c) {
      lock::mark_slot_done(c,
                           held.keys,
                           held.slot->number,
                           held.slot->left + *held.options.once_per);
      return true;
    });
  } catch (const Error& e) {
    log::warning(std::string(e.what())
                 + "; another run may follow in this slot");
  }
}

proc::ChildSpec
child_spec(const Held& held, const proc::SignalBlock& signals) {
  proc::ChildSpec spec;
  spec.argv = held.options.command;
  spec.environment = {"RLOCK_NAME=" + held.keys.name,
                      "RLOCK_KEY=" + held.keys.lock,
                      "RLOCK_TOKEN=" + held.token,
                      "RLOCK_FENCE=" + std::to_string(held.acquired.fence)};
  spec.signal_mask = signals.original_mask();
  return spec;
}

void
arm_timer(int timer_fd, std::optional<BootTime> when) {
  itimerspec spec{};
  if (when) {
    // An absolute zero would disarm the timer: fire at least at 1ns.
    const auto ns = std::max<std::int64_t>(when->count(), 1);
    spec.it_value.tv_sec = ns / 1'000'000'000;
    spec.it_value.tv_nsec = ns % 1'000'000'000;
  }
  timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &spec, nullptr);
}

// Waits for one of: a signal, news from the renewer, the timer.
void
wait_for_event(const proc::SignalBlock& signals,
               const lock::Renewer& renewer,
               int timer_fd) {
  std::array<pollfd, 3> fds{{{signals.fd(), POLLIN, 0},
                             {renewer.wakeup_fd(), POLLIN, 0},
                             {timer_fd, POLLIN, 0}}};
  ::poll(fds.data(), fds.size(), -1);
  renewer.drain_wakeups();
  std::uint64_t expirations = 0;
  [[maybe_unused]] const auto n =
      ::read(timer_fd, &expirations, sizeof(expirations));
}

// Runs until the child exits: forwards signals, and stops the child's group
// when the lease is lost or could expire. The timer runs on CLOCK_BOOTTIME,
// so it fires on time even after a suspend.
Supervision
supervise(proc::Child& child,
          const lock::Renewer& renewer,
          const proc::SignalBlock& signals,
          const Held& held) {
  const auto& options = held.options;
  UniqueFd timer(timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC | TFD_NONBLOCK));
  if (timer.get() < 0) {
    throw_errno("timerfd_create");
  }
  Supervision result;
  std::optional<BootTime> sigkill_at;
  bool killed = false;
  while (true) {
    if (const auto code = child.exit_code()) {
      result.exit_code = *code;
      return result;
    }
    const BootTime now = boot_now();
    if (!result.loss) {
      result.loss = renewer.loss();
      if (!result.loss && now >= renewer.kill_deadline()) {
        result.loss = "could not renew it in time";
      }
      if (result.loss) {
        events::emit("lost", held.keys.name, {{"reason", *result.loss}});
        log::error("lost lock " + quote(held.keys.name) + ": " + *result.loss
                   + "; sending SIG" + proc::signal_name(options.kill_signal)
                   + " to the command");
        child.signal_group(options.kill_signal);
        sigkill_at = now + options.timing.kill_after;
      }
    }
    if (sigkill_at && !killed && now >= *sigkill_at) {
      child.signal_group(SIGKILL);
      killed = true;
    }
    arm_timer(timer.get(),
              !result.loss ? std::optional(renewer.kill_deadline())
              : killed     ? std::nullopt
                           : sigkill_at);
    wait_for_event(signals, renewer, timer.get());
    while (const int signal = take_terminating(signals)) {
      child.signal_group(signal);
    }
  }
}

int
run_held(const Held& held, const proc::SignalBlock& signals) {
  const auto& options = held.options;
  std::optional<proc::Child> child;
  try {
    child.emplace(proc::Child::spawn(child_spec(held, signals)));
  } catch (const Error&) {
    end_hold(held);
    throw;
  }
  proc::Watchdog watchdog = proc::Watchdog::start(child->pid());
  lock::Renewer renewer(options.server.endpoint,
                        options.server.connect,
                        held.keys,
                        held.token,
                        options.timing,
                        held.acquired.sent);
  const auto result = supervise(*child, renewer, signals, held);
  renewer.stop();
  // Whatever the command left running in its group dies before the release.
  const int exit_code = child->finish();
  watchdog.disarm();
  if (result.loss) {
    return exit_code::k_lock_lost;
  }
  if (held.slot && exit_code == exit_code::k_success) {
    mark_slot(held);
  }
  end_hold(held);
  return exit_code;
}

lock::Holder
holder_of(const RunOptions& options) {
  return lock::Holder{
      host_name(), getpid(), user_name(), shell_join(options.command)};
}

} // namespace

int
run_lock(const RunOptions& options) {
  log::set_level(options.log_level);
  events::open(options.events_path);
  const BootTime started = boot_now();
  const proc::SignalBlock signals(
      {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD},
      {SIGPIPE, SIGTTOU, SIGTTIN});
  std::optional<redis::Connection> connection(
      redis::Connection::open(options.server.endpoint, options.server.connect));
  const auto keys = lock::keys_for(options.server.prefix, options.name);
  const auto token = random_token();
  const auto hooks = make_wait_hooks(options.server, signals);
  const auto outcome = lock::wait_for_lock(
      *connection,
      keys,
      token,
      options.timing.ttl,
      holder_of(options),
      lock::WaitOptions{options.nonblock, options.wait, options.fair},
      hooks);
  using Kind = lock::WaitOutcome::Kind;
  if (outcome.kind == Kind::interrupted) {
    return exit_code::k_signal_base + outcome.signal;
  }
  if (outcome.kind == Kind::timed_out) {
    log::info("not acquired: " + quote(options.name) + " is held by "
              + outcome.attempt.holder);
    return options.conflict_exit_code;
  }
  Held held{options, keys, token, outcome.attempt, connection, std::nullopt};
  log::info("acquired " + quote(options.name) + " (fence "
            + std::to_string(outcome.attempt.fence) + ")");
  events::emit("acquired",
               options.name,
               {{"fence", outcome.attempt.fence},
                {"waited_ms", milliseconds(outcome.attempt.sent - started)}});
  if (const int signal = take_terminating(signals)) {
    end_hold(held);
    return exit_code::k_signal_base + signal;
  }
  if (options.once_per) {
    try {
      held.slot = lock::current_slot(*connection, keys, *options.once_per);
    } catch (const Error&) {
      end_hold(held);
      throw;
    }
    if (held.slot->done) {
      log::info(quote(options.name) + " already ran in this --once-per slot");
      end_hold(held);
      return options.conflict_exit_code;
    }
  }
  return run_held(held, signals);
}

} // namespace rlock::cli
