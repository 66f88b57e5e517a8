#pragma once

#include <string_view>

namespace rlock::proc {

// Remembers where argv lives, so that a forked helper can rename itself.
// Call once from main() with its arguments.
void remember_argv(int argc, char** argv);

// Overwrites this process's command line as ps(1) and pkill -f see it, within
// the space argv had: a watchdog must not look like the rlock it guards, or
// `pkill -f 'rlock NAME'` would kill both.
void set_process_title(std::string_view title);

} // namespace rlock::proc
