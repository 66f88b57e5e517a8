#pragma once

#include <rlock/lock/protocol.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace rlock::lock {

// How long a server must have been up before it grants a lock, and how
// messages name that rule (cli/ gives its option's name).
struct RestartGrace {
  Duration length{}; // zero: off
  std::string name = "the restart grace";
};

// Returns the uptime_in_seconds field of an INFO reply's text, or nothing.
std::optional<std::int64_t> uptime_of(std::string_view info);

// Returns the latest instant at which a server can have started that
// reported `uptime_seconds` in a reply received at `received`.
BootTime latest_start(std::int64_t uptime_seconds, BootTime received);

// Returns how a server that started at the latest at `started` holds an
// attempt back at `now`: nothing when it has been up for `grace`, else a busy
// attempt whose retry_ms is when the grace ends and whose held_back says why.
std::optional<AcquireAttempt> held_back(const std::string& address,
                                        BootTime started,
                                        const RestartGrace& grace,
                                        BootTime now);

// Runs `attempt` (an acquire, or a look at the lock) on `connection`, unless
// the server started less than `grace` ago: then it answers held_back() and,
// when the attempt took the lock, calls `undo`. The first attempt on a
// connection carries an INFO with it in the same write; later ones ask the
// server nothing more, and a held-back one is not sent at all. Emits `busy`
// for `name` when the server held the attempt back. Throws Error
// (unavailable) when the server will not say when it started, or as
// `attempt` does.
AcquireAttempt
attempt_after_grace(redis::Connection& connection,
                    const std::string& name,
                    const RestartGrace& grace,
                    const std::function<AcquireAttempt()>& attempt,
                    const std::function<void()>& undo);

} // namespace rlock::lock
