#pragma once

#include <rlock/util/fd.hpp>

#include <csignal>
#include <vector>

namespace rlock::proc {

// Blocks a set of signals for the whole process lifetime of the object and
// delivers them through a signalfd instead of handlers. Threads started
// later inherit the mask, so only the owner sees them. The destructor
// restores the previous mask.
class SignalBlock {
public:
  // Blocks `delivered` (readable through fd()) and `silenced` (just blocked).
  // A delivered signal whose disposition is SIG_IGN is left alone: ignored.
  SignalBlock(const std::vector<int>& delivered,
              const std::vector<int>& silenced);
  ~SignalBlock();

  SignalBlock(const SignalBlock&) = delete;
  SignalBlock& operator=(const SignalBlock&) = delete;

  // Returns the signalfd; readable while a delivered signal is pending.
  int
  fd() const {
    return m_fd.get();
  }

  // Returns the next pending delivered signal, or 0 when none is pending.
  int take() const;

  // Waits up to `timeout_ms` (-1: forever) for a delivered signal; returns it,
  // or 0 on timeout.
  int wait(int timeout_ms) const;

  // Returns the mask from before, for a child to restore before exec.
  const sigset_t&
  original_mask() const {
    return m_original;
  }

private:
  sigset_t m_original{};
  UniqueFd m_fd;
};

} // namespace rlock::proc
