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

// Returns the hooks a waiter needs: subscriptions to `server`, and sleeps that
// a signal in `signals` cuts short.
lock::WaitHooks make_wait_hooks(const ServerOptions& server,
                                const proc::SignalBlock& signals);

} // namespace rlock::cli
