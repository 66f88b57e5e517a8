#pragma once

#include <rlock/cli/commands.hpp>

namespace rlock::cli {

// `rlock doctor`: its entry in the command table.
CommandEntry doctor_command();

// Checks what makes locks on the server unsafe (eviction, persistence,
// replication, round trip, clock, version) and prints one line per check, or
// JSON. Returns 0 when every check is ok, 1 otherwise. Throws Error when
// Redis is unavailable or the output cannot be written.
int run(const DoctorOptions& options);

} // namespace rlock::cli
