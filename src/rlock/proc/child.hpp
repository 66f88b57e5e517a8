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
  // Forks the child into its group, where it waits before the exec until
  // start(): the caller can arm what guards the command and check that the
  // command may still run. Throws Error (system: fork failed).
  static Child spawn(const ChildSpec& spec);

  // Lets the child exec; returns once the exec succeeded. Throws Error with
  // not_found or not_executable, the child reaped.
  void start();

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
  UniqueFd m_go;               // closing it (or a byte) lets the child exec
  UniqueFd m_exec_error;       // the exec's errno, or EOF once it succeeded
  bool m_has_terminal = false; // stdin is a terminal
  bool m_resume_pending = false;
  int m_termination_signal = 0;
};

} // namespace rlock::proc
