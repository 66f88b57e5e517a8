#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace rlock::proc {

// Returns this machine's host name, "?" when it has none.
std::string host_name();

// Returns the name of the effective user, or its uid as a number.
std::string user_name();

// Returns the argv of process `pid` from /proc, empty when it cannot be read.
std::vector<std::string> command_line_of(pid_t pid);

// Returns the live descendants of `root` (children, their children, ...),
// read from /proc; `excluded` and its descendants are left out.
std::vector<pid_t> descendants_of(pid_t root, pid_t excluded);

// Reaps the zombie children of this process, except `kept` ones: with
// PR_SET_CHILD_SUBREAPER, orphaned descendants become our children.
void reap_children_except(const std::vector<pid_t>& kept);

} // namespace rlock::proc
