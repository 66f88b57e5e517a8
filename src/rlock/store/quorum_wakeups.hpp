#pragma once

#include <rlock/lock/store.hpp>
#include <rlock/util/fd.hpp>

#include <memory>
#include <vector>

namespace rlock::lock {

// Wakes a waiter when any server wakes it: an epoll descriptor over one
// source per server (the quorum store's watch() and watch_releases()). A
// source that breaks is dropped (a wake-up, since one may have been lost);
// only when every one has broken does take() or listen() throw.
class QuorumWakeups final : public Wakeups {
public:
  // Throws redis::Failure when no epoll descriptor can be made.
  explicit QuorumWakeups(std::vector<std::unique_ptr<Wakeups>> sources);

  void listen() override;
  int fd() const override;
  int take() override;

private:
  // Runs `step` on every source left and sums what it returns; a source
  // that fails is dropped and counts 1.
  template <typename Step>
  int each(Step&& step);

  UniqueFd m_epoll;
  std::vector<std::unique_ptr<Wakeups>> m_sources;
};

} // namespace rlock::lock
