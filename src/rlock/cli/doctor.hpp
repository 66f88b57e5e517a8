#pragma once

#include <rlock/cli/command_entry.hpp>

namespace rlock::cli {

// `rlock doctor`: its entry in the command table.
CommandEntry doctor_command();

// Checks what makes locks on the server unsafe (eviction, persistence,
// replication, round trip, clock, version; on every master of a Cluster, then
// the Cluster's state, replicas and failover time; where NAME lives) and
// prints one line per check, or JSON. Returns 0 when every check is ok, 1
// otherwise. Throws Error when Redis is unavailable or the output cannot be
// written.
int run(const DoctorOptions& options);

} // namespace rlock::cli
