#pragma once

#include <rlock/proc/child.hpp>

#include <sys/types.h>

namespace rlock::proc {

// Makes orphaned descendants come to this process rather than to init, so
// that signal_tree() still reaches them.
void become_subreaper();

// Signals the child's group, and continues it so that a stopped group gets
// the signal too (as timeout(1) does).
void signal_and_continue(const Child& child, int signal);

// Signals everything the child started, also what left its process group
// (timeout(1) in a script, setsid): as subreaper we keep even orphans in our
// tree. `watchdog` (the one descendant spared) is left alone.
void signal_tree(const Child& child, pid_t watchdog, int signal);

// SIGKILLs every descendant of this process.
void kill_descendants();

} // namespace rlock::proc
