#include <rlock/redis/failure.hpp>
#include <rlock/store/quorum_wakeups.hpp>

#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace rlock::lock {

QuorumWakeups::QuorumWakeups(std::vector<std::unique_ptr<Wakeups>> sources)
    : m_epoll(::epoll_create1(EPOLL_CLOEXEC)), m_sources(std::move(sources)) {
  if (m_epoll.get() < 0) {
    throw redis::Failure(redis::FailureKind::closed,
                         std::string("epoll_create1 failed: ")
                             + std::strerror(errno));
  }
  for (std::size_t i = 0; i < m_sources.size(); ++i) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = i;
    ::epoll_ctl(m_epoll.get(), EPOLL_CTL_ADD, m_sources[i]->fd(), &event);
  }
}

template <typename Step>
int
QuorumWakeups::each(Step&& step) {
  int wakeups = 0;
  std::string last_error;
  for (auto& source : m_sources) {
    if (!source) {
      continue;
    }
    try {
      wakeups += step(*source);
    } catch (const redis::Failure& e) {
      ::epoll_ctl(m_epoll.get(), EPOLL_CTL_DEL, source->fd(), nullptr);
      source.reset();
      last_error = e.what();
      ++wakeups;
    }
  }
  if (std::none_of(m_sources.begin(), m_sources.end(), [](const auto& s) {
        return s != nullptr;
      })) {
    throw redis::Failure(redis::FailureKind::closed,
                         "every wake-up source broke (" + last_error + ")");
  }
  return wakeups;
}

void
QuorumWakeups::listen() {
  each([](Wakeups& source) {
    source.listen();
    return 0;
  });
}

int
QuorumWakeups::fd() const {
  return m_epoll.get();
}

int
QuorumWakeups::take() {
  return each([](Wakeups& source) { return source.take(); });
}

} // namespace rlock::lock
