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

// Returns the live processes whose environment, as read from
// /proc/PID/environ, holds `entry` ("NAME=value"); processes of other users
// (unreadable) are left out.
std::vector<pid_t> processes_with_environment_entry(const std::string& entry);

// Returns the numeric entries of a /proc directory ("/proc", or
// "/proc/self/task" for this process's threads).
std::vector<pid_t> numeric_entries(const char* path);

// Reaps the zombie children of this process, except `kept` ones: with
// PR_SET_CHILD_SUBREAPER, orphaned descendants become our children.
void reap_children_except(const std::vector<pid_t>& kept);

} // namespace rlock::proc
