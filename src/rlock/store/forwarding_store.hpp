#pragma once

#include <rlock/lock/store.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::lock {

// A store that runs its steps on another store (the inner one) and changes
// only some of them. It forwards every step, the survey and the session to
// inner(); a step on one lock goes through on_store(), which a wrapper
// overrides to choose the store or to try a step again elsewhere. A wrapper
// then overrides another(), inner(), and the few steps it does differently.
class ForwardingStore : public LockStore {
public:
  std::string key_of(std::string_view name) const override;
  AcquireAttempt acquire(const LockRequest& request,
                         const WaiterEntry& entry) override;
  PeekResult peek(std::string_view name) override;
  std::int64_t lease_remaining_ms(std::string_view name) override;
  Renewal renew(std::string_view name,
                const std::string& token,
                Duration ttl,
                RenewMode mode) override;
  bool release(std::string_view name, const std::string& token) override;
  void release_quietly(std::string_view name,
                       const std::string& token) noexcept override;
  std::optional<Duration> check(std::string_view name,
                                const std::string& token) override;
  std::optional<BrokenLock> force_release(std::string_view name) override;
  void leave_queue(std::string_view name, const std::string& token) override;
  Slot current_slot(std::string_view name, Duration length) override;
  void mark_slot_done(std::string_view name,
                      std::int64_t number,
                      Duration keep) override;
  std::unique_ptr<Wakeups> watch(std::string_view name,
                                 const std::string& token) override;
  std::unique_ptr<Wakeups> watch_releases(std::string_view name) override;

  StatusSnapshot read_locks(const std::vector<std::string>& names) override;
  StatusSnapshot list_locks(std::string_view match) override;
  std::vector<ServerFacts> examine() override;
  std::optional<DeploymentState> deployment_state() override;

  void connect() override;
  void disconnect() override;
  void set_deadline(std::optional<BootTime> deadline) override;
  int idle_fd() const override;
  bool idle_connection_broken() override;

protected:
  // Returns the store the steps run on now.
  virtual LockStore& inner() const = 0;

  // Runs `step`, a step on lock `name`, on the store that serves it: on
  // inner() unless overridden. An override may run it more than once (the
  // last run's result counts).
  virtual void on_store(std::string_view name,
                        const std::function<void(LockStore&)>& step);

  // Runs `step` through on_store() and returns what its last run returned.
  template <typename Result, typename Step>
  Result
  through(std::string_view name, Step&& step) {
    std::optional<Result> result;
    on_store(name, [&](LockStore& store) { result.emplace(step(store)); });
    return std::move(*result);
  }
};

} // namespace rlock::lock
