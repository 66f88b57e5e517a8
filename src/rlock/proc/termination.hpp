#pragma once

namespace rlock::proc {

// Asks main() to end rlock by `signal` instead of exiting 128+N, once all is
// cleaned up: a shell running rlock in a script or loop then sees its job
// interrupted and stops too, as it would for the command run directly.
void end_by_signal(int signal);

// Returns the signal asked for by end_by_signal(), or 0.
int pending_end_signal();

// Dies of `signal` (default disposition, unblocked, no core dump), or exits
// 128+N when the signal's default action is not to terminate.
[[noreturn]] void die_by_signal(int signal);

} // namespace rlock::proc
