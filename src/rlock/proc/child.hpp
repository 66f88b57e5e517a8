#pragma once

#include <rlock/util/fd.hpp>

#include <sys/types.h>

#include <csignal>
#include <optional>
#include <string>
#include <vector>

namespace rlock::proc {

// What to run and how.
struct ChildSpec {
  std::vector<std::string> argv;        // argv[0] is looked up in $PATH
  std::vector<std::string> environment; // "NAME=value", added to ours
  sigset_t signal_mask{};               // the mask to exec with
};

// A command running in a process group of its own, so that a signal reaches
// everything it started. At a terminal the group gets the terminal while it
// runs, and a job-control stop (Ctrl-Z) suspends rlock with it.
class Child {
public:
  // Starts the command in a group of its own; returns once it runs. Throws
  // Error: system when the fork failed; not_found or not_executable when
  // the exec did, the child reaped.
  static Child spawn(const ChildSpec& spec);

  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  ~Child();

  // Returns the child's pid, which is also its process group id.
  pid_t
  pid() const {
    return m_pid;
  }

  // Sends `signal` to the child's whole process group; a group already gone is
  // not an error.
  void signal_group(int signal) const;

  // Returns the child's exit code once it has exited (128+N for signal N),
  // without reaping it; nothing while it runs. Handles terminal stops. A
  // child reaped by someone else (ECHILD) has exited, with k_status_unknown.
  std::optional<int> shell_status();

  // True after a job-control stop (Ctrl-Z, fg) once rlock runs again: the
  // child stays stopped until resume(), or until it is killed.
  bool resume_pending() const;

  // Continues the child's group after a job-control stop.
  void resume();

  // Kills whatever the child left running in its group, reaps the child and
  // takes the terminal back. Returns the exit code.
  int finish();

  // Returns the signal the child died of, once finished; 0 if it exited.
  int
  termination_signal() const {
    return m_termination_signal;
  }

private:
  Child(pid_t pid, bool has_terminal);
  void follow_stop(int signal);

  pid_t m_pid = -1;
  std::string m_program;       // argv[0], for messages
  bool m_has_terminal = false; // stdin is a terminal
  bool m_resume_pending = false;
  int m_termination_signal = 0;
};

} // namespace rlock::proc
