#pragma once

#include <rlock/lock/store.hpp>
#include <rlock/redis/subscription.hpp>

#include <utility>

namespace rlock::lock {

// A waiter's wake-ups: elements pushed onto a list, each taken by one
// waiter.
class ListWakeups final : public Wakeups {
public:
  explicit ListWakeups(redis::WakeList list) : m_list(std::move(list)) {
  }

  void
  listen() override {
    m_list.listen();
  }

  int
  fd() const override {
    return m_list.fd();
  }

  int
  take() override {
    return m_list.take();
  }

private:
  redis::WakeList m_list;
};

// Every release, as published on a channel (rlock's, or an application
// library's such as Redisson's unlock channel).
class ReleaseWakeups final : public Wakeups {
public:
  explicit ReleaseWakeups(redis::Subscription subscription)
      : m_subscription(std::move(subscription)) {
  }

  void
  listen() override {
  }

  int
  fd() const override {
    return m_subscription.fd();
  }

  int
  take() override {
    return m_subscription.take_messages();
  }

private:
  redis::Subscription m_subscription;
};

} // namespace rlock::lock
