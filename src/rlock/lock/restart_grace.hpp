#pragma once

#include <rlock/lock/lease.hpp>
#include <rlock/lock/server_facts.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/util/clock.hpp>

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

// True when `replication`, the text of an INFO replication reply, shows a
// master whose data is a copy it took from a master since it started: a
// replica promoted after a full or partial resynchronization completed. Such
// a server lost nothing when it started (the copy replaced whatever it
// started with), so the grace does not hold it back. Redis tells by:
// - role:master;
// - master_replid2 set (not all zeros): set only by a promotion, by a
//   partial resync onto a master's new history, and (Redis 7+) by a master
//   that reloads an RDB file written with replication information;
// - repl_backlog_active:1: a replica creates its backlog only once a
//   resynchronization completes, never for the data it started with (a
//   replica promoted before that has none);
// - second_repl_offset (the offset at the promotion, plus one) greater than
//   repl_backlog_first_byte_offset (the offset at the resynchronization,
//   plus one): the master's stream went on after the copy. A master that
//   reloaded an RDB file has both at the file's offset, plus one, however
//   much it wrote since.
// Anything else, a field missing or malformed included, is false. It trusts
// the master the copy came from: a master that restarted empty and stayed
// master (no failover) hands its loss to the replicas that copy it.
bool holds_synced_copy(std::string_view replication);

// The same for the fields of INFO replication (parse_info()).
bool holds_synced_copy(const Fields& replication);

// Returns the latest instant at which a server can have started that
// reported `uptime_seconds` in a reply received at `received`.
BootTime latest_start(std::int64_t uptime_seconds, BootTime received);

// Returns how a server that started at the latest at `started` holds an
// attempt back at `now`: nothing when it has been up for `grace`, else a busy
// attempt whose retry_ms is when the grace ends and whose held_back says why.
std::optional<Busy> held_back(const std::string& address,
                              BootTime started,
                              const RestartGrace& grace,
                              BootTime now);

// The failure of a server whose start cannot be told (`why`) while a
// restart grace is asked for.
redis::Failure unknown_start_failure(const std::string& address,
                                     const std::string& why,
                                     const RestartGrace& grace);

// Runs `attempt` (an acquire) on `connection`, unless
// the server started less than `grace` ago and holds no synced copy
// (holds_synced_copy()): then it answers held_back() and, when the attempt
// took the lock, calls `undo`. The first attempt on a connection carries
// INFO server and INFO replication with it in the same write (two commands:
// Redis 6 reads one section per INFO); later ones ask the server nothing
// more, and a held-back one is not sent at all. Emits `busy` for `name` when
// the server held the attempt back. Throws Error (unavailable) when the
// server will not say when it started, or as `attempt` does.
AcquireAttempt
attempt_after_grace(redis::Connection& connection,
                    const std::string& name,
                    const RestartGrace& grace,
                    const std::function<AcquireAttempt()>& attempt,
                    const std::function<void()>& undo);

// The same for a look at the lock (peek), which takes nothing to undo.
PeekResult look_after_grace(redis::Connection& connection,
                            const std::string& name,
                            const RestartGrace& grace,
                            const std::function<PeekResult()>& look);

} // namespace rlock::lock
