#include <rlock/cli/wait_hooks.hpp>
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

lock::WaitHooks
make_wait_hooks(const ServerOptions& server,
                const proc::SignalBlock& signals,
                redis::Connection& connection) {
  return lock::WaitHooks{[&server](const std::vector<std::string>& channels) {
                           return redis::Subscription::open(
                               server.endpoint, server.connect, channels);
                         },
                         [&signals](int fd, Duration duration) {
                           return sleep_or_signal(signals, fd, duration);
                         },
                         [&server, &connection] {
                           connection = redis::Connection::open(server.endpoint,
                                                                server.connect);
                         }};
}

lock::WaitOutcome
acquire_or_undo(redis::Connection& connection,
                const LockWait& wait,
                const proc::SignalBlock& signals) {
  try {
    auto outcome =
        lock::wait_for_lock(connection,
                            wait.keys,
                            wait.token,
                            wait.ttl,
                            wait.holder,
                            wait.options,
                            make_wait_hooks(wait.server, signals, connection));
    if (outcome.maybe_acquired
        && outcome.kind != lock::WaitOutcome::Kind::acquired) {
      // A lost reply may have left the lock ours: compare-and-delete.
      lock::release_quietly(
          wait.server.endpoint, wait.server.connect, wait.keys, wait.token);
    }
    return outcome;
  } catch (const Error&) {
    lock::release_quietly(
        wait.server.endpoint, wait.server.connect, wait.keys, wait.token);
    throw;
  }
}

} // namespace rlock::cli
