#include <rlock/proc/signal_block.hpp>
#include <rlock/util/error.hpp>

#include <poll.h>
#include <sys/signalfd.h>

#include <cerrno>

namespace rlock::proc {

namespace {

bool
ignored(int signal) {
  struct sigaction current {};
  return sigaction(signal, nullptr, &current) == 0
         && current.sa_handler == SIG_IGN;
}

} // namespace

SignalBlock::SignalBlock(const std::vector<int>& delivered,
                         const std::vector<int>& silenced) {
  sigset_t delivered_set;
  sigemptyset(&delivered_set);
  for (int signal : delivered) {
    // A blocked signal is queued even when ignored: one our caller ignores
    // (nohup, `&` in a script) must stay ignored, not end the wait.
    if (!ignored(signal)) {
      sigaddset(&delivered_set, signal);
    }
  }
  sigset_t blocked = delivered_set;
  for (int signal : silenced) {
    sigaddset(&blocked, signal);
  }
  if (pthread_sigmask(SIG_BLOCK, &blocked, &m_original) != 0) {
    throw_errno("pthread_sigmask");
  }
  const int fd = signalfd(-1, &delivered_set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) {
    pthread_sigmask(SIG_SETMASK, &m_original, nullptr);
    throw_errno("signalfd");
  }
  m_fd.reset(fd);
}

SignalBlock::~SignalBlock() {
  m_fd.reset();
  // A write to a closed pipe already failed with EPIPE and was handled;
  // its SIGPIPE must not kill us once unblocked.
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  const timespec no_wait{0, 0};
  while (sigtimedwait(&pipe_only, nullptr, &no_wait) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &m_original, nullptr);
}

int
SignalBlock::take() const {
  signalfd_siginfo info{};
  while (true) {
    const auto n = ::read(m_fd.get(), &info, sizeof(info));
    if (n == static_cast<ssize_t>(sizeof(info))) {
      return static_cast<int>(info.ssi_signo);
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    return 0;
  }
}

int
SignalBlock::wait(int timeout_ms) const {
  pollfd entry{m_fd.get(), POLLIN, 0};
  const int ready = ::poll(&entry, 1, timeout_ms);
  return ready > 0 ? take() : 0;
}

} // namespace rlock::proc
