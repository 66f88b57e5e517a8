#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/wait_hooks.hpp>
#include <rlock/proc/termination.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/util/clock.hpp>
#include <rlock/util/error.hpp>

#include <poll.h>

#include <array>
#include <climits>

namespace rlock::cli {

namespace {

// Sleeps up to `duration` or until `fd` turns readable; returns a
// terminating signal that cut it short, or 0.
int
sleep_or_signal(const proc::SignalBlock& signals, int fd, Duration duration) {
  const BootTime end = boot_now() + duration;
  while (true) {
    const auto left = end - boot_now();
    if (left <= Duration::zero()) {
      return 0;
    }
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    std::array<pollfd, 2> fds{{{signals.fd(), POLLIN, 0}, {fd, POLLIN, 0}}};
    ::poll(fds.data(),
           fds.size(),
           static_cast<int>(std::min<long long>(ms, INT_MAX)));
    if (const int signal = take_terminating(signals)) {
      return signal;
    }
    if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      return 0;
    }
  }
}

} // namespace

int
take_terminating(const proc::SignalBlock& signals) {
  while (const int signal = signals.take()) {
    if (signal != SIGCHLD) {
      return signal;
    }
  }
  return 0;
}

int
interrupted_by(int signal) {
  proc::end_by_signal(signal);
  return exit_code::k_signal_base + signal;
}

lock::WaitHooks
make_wait_hooks(const proc::SignalBlock& signals) {
  return lock::WaitHooks{[&signals](int fd, Duration duration) {
                           return sleep_or_signal(signals, fd, duration);
                         },
                         nullptr,
                         nullptr};
}

lock::WaitOutcome
acquire_or_undo(lock::LockSession& store,
                const lock::LockRequest& request,
                const lock::WaitOptions& options,
                const proc::SignalBlock& signals,
                const std::function<void()>& before_waiting) {
  auto hooks = make_wait_hooks(signals);
  hooks.before_first_sleep = before_waiting;
  try {
    auto outcome = lock::wait_for_lock(store, request, options, hooks);
    if (outcome.uncertain
        && outcome.kind != lock::WaitOutcome::Kind::acquired) {
      store.release_quietly(request.name, request.token);
    }
    return outcome;
  } catch (const Error&) {
    store.release_quietly(request.name, request.token);
    throw;
  }
}

void
connect_for_waiting(lock::StoreSession& store, const WaitingOptions& waiting) {
  try {
    store.connect();
  } catch (const redis::Failure& failure) {
    if (waiting.nonblock || !redis::failover_under_way(failure)) {
      throw;
    }
  }
}

} // namespace rlock::cli
