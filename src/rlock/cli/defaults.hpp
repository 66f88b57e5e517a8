// Every default of the command line, defined once: the parser uses these
// values, and the help text prints them.
#pragma once

#include <rlock/cli/exit_codes.hpp>
#include <rlock/util/duration.hpp>

#include <csignal>
#include <cstdint>
#include <string_view>

namespace rlock::cli::defaults {

using namespace std::chrono_literals;

inline constexpr std::string_view k_url = "redis://127.0.0.1:6379/0";
inline constexpr std::string_view k_prefix = "rlock:";
inline constexpr Duration k_connect_timeout = 2s;
// --password-command: a password is fetched anew this often while a lock is
// held, and a new connection uses one at most this old. Well inside the
// shortest token lifetime met (ElastiCache and MemoryDB IAM tokens: 15
// minutes; Azure Entra tokens are to be sent again 3 minutes before they
// expire, about an hour), so a failed fetch leaves two more tries.
inline constexpr Duration k_password_refresh = 5min;
// The shortest --password-refresh: the command is not run in a loop.
inline constexpr Duration k_min_password_refresh = 1s;
// How long the password command may take before it is killed.
inline constexpr Duration k_password_command_timeout = 10s;
inline constexpr Duration k_io_timeout = 5s;
// How long an acquire or renewal waits for its replicas' confirmation.
inline constexpr Duration k_replicas_timeout = 1s;
// With Sentinel and Cluster, the replicas that must confirm each acquire and
// renewal: a fixed count, so that a master with none (a zombie, or one whose
// replica is still syncing) fails closed rather than confirming nothing.
inline constexpr int k_replicated_replicas = 1;

// rlock NAME COMMAND: the lease, renewed every third of it.
inline constexpr Duration k_run_ttl = 30s;
// rlock acquire: a lease nobody renews, long enough for a script's step.
inline constexpr Duration k_acquire_ttl = 5min;
// rlock doctor judges the round trip against the lease a run takes.
inline constexpr Duration k_doctor_ttl = k_run_ttl;
// A holder from before an empty restart that cannot reach the new server
// still stops its command by the end of its last lease, at most one TTL
// after the restart: the grace is the default TTL.
inline constexpr Duration k_restart_grace = k_run_ttl;

inline constexpr int k_conflict_exit_code = exit_code::k_not_acquired;
// --limit's largest N: each acquire looks at every live holder for a free
// slot.
inline constexpr std::int64_t k_max_limit = 10000;
inline constexpr int k_kill_signal = SIGTERM;
inline constexpr Duration k_min_validity = 0s;
inline constexpr Duration k_status_interval = 2s;

// Returns `duration` as the help text writes it: "30s", "5m", "500ms".
std::string help_text(Duration duration);

} // namespace rlock::cli::defaults
