#pragma once

#include <rlock/cli/options.hpp>
#include <rlock/lock/waiter.hpp>
#include <rlock/proc/signal_block.hpp>

namespace rlock::cli {

// The signals that end a wait, and that `run` forwards to its child.
inline constexpr std::array<int, 6> k_forwarded_signals{
    SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// Returns the first pending signal other than SIGCHLD, or 0.
int take_terminating(const proc::SignalBlock& signals);

// Asks main() to end rlock by `signal` once all is cleaned up
// (proc::end_by_signal), as a command interrupted by it would end; returns
// 128+N, the exit code should rlock outlive that.
int interrupted_by(int signal);

// Returns the hooks a waiter needs: sleeps that a signal in `signals` cuts
// short.
lock::WaitHooks make_wait_hooks(const proc::SignalBlock& signals);

// Returns the waiter's view of -n, -w and --fair.
inline lock::WaitOptions
wait_options_of(const WaitingOptions& waiting) {
  return lock::WaitOptions{waiting.nonblock, waiting.wait, waiting.fair};
}

// Connects now, so that a wrong URL is said at once; a failover under way
// is left to the wait (without -n), which rides it out.
void connect_for_waiting(lock::StoreSession& store,
                         const WaitingOptions& waiting);

// Waits for the lock, cut short by signals in `signals`. An acquire whose
// reply never came may have taken the lock: on an error, and when a wait
// that lost a reply ends without the lock (a signal, -w ran out), it is
// released again (compare-and-delete, bounded, best effort).
// `before_waiting`, when given, runs once before the first sleep: what the
// caller can prepare while another holds the lock.
lock::WaitOutcome
acquire_or_undo(lock::LockSession& store,
                const lock::LockRequest& request,
                const lock::WaitOptions& options,
                const proc::SignalBlock& signals,
                const std::function<void()>& before_waiting = {});

} // namespace rlock::cli
