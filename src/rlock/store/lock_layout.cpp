// rlock's own layout as a LockLayout: thin wrappers over protocol.hpp's
// calls and replies.hpp's decoders.

#include <rlock/store/lock_layout.hpp>
#include <rlock/store/replies.hpp>

namespace rlock::lock {

namespace {

class RlockLayout final : public LockLayout {
public:
  explicit RlockLayout(std::string prefix) : m_prefix(std::move(prefix)) {
  }

  std::string
  key_of(std::string_view name) const override {
    return keys(name).lock;
  }

  bool
  polled() const override {
    return false;
  }

  ScriptCall
  acquire_call(const LockRequest& request,
               const WaiterEntry& entry) const override {
    return lock::acquire_call(
        keys(request.name), request.token, request.ttl, request.holder, entry);
  }

  AcquireAttempt
  decode_acquire(const redis::Reply& reply,
                 const std::string& what) const override {
    return lock::decode_acquire(reply, what);
  }

  ScriptCall
  renew_call(std::string_view name,
             const std::string& token,
             Duration ttl,
             RenewMode mode) const override {
    return lock::renew_call(keys(name), token, ttl, mode);
  }

  Renewal
  decode_renew(const redis::Reply& reply,
               const std::string& what) const override {
    return lock::decode_renew(reply, what);
  }

  ScriptCall
  release_call(std::string_view name,
               const std::string& token,
               bool wake) const override {
    return lock::release_call(keys(name), token, wake);
  }

  bool
  decode_release(const redis::Reply& reply,
                 const std::string& what) const override {
    return decode_yes_no(reply, what);
  }

  ScriptCall
  check_call(std::string_view name, const std::string& token) const override {
    return lock::check_call(keys(name), token);
  }

  std::optional<Duration>
  decode_check(const redis::Reply& reply,
               const std::string&,
               const std::string& what) const override {
    return lock::decode_check(reply, what);
  }

  ScriptCall
  peek_call(std::string_view name) const override {
    return lock::peek_call(keys(name));
  }

  PeekResult
  decode_peek(const redis::Reply& reply,
              const std::string& what) const override {
    return lock::decode_peek(reply, what);
  }

  ScriptCall
  force_release_call(std::string_view name) const override {
    return lock::force_release_call(keys(name));
  }

  std::optional<BrokenLock>
  decode_force_release(const redis::Reply& reply,
                       const std::string& what) const override {
    return lock::decode_force_release(reply, what);
  }

  ScriptCall
  raise_fence_call(std::string_view name,
                   const std::string& token,
                   std::int64_t fence) const override {
    return lock::raise_fence_call(keys(name), token, fence);
  }

  std::optional<ScriptCall>
  leave_queue_call(std::string_view name,
                   const std::string& token) const override {
    return lock::leave_queue_call(keys(name), token);
  }

  ScriptCall
  slot_call(std::string_view name, Duration length) const override {
    return lock::slot_call(keys(name), length);
  }

  ScriptCall
  mark_slot_call(std::string_view name,
                 std::int64_t number,
                 Duration keep) const override {
    return lock::mark_slot_call(keys(name), number, keep);
  }

private:
  LockKeys
  keys(std::string_view name) const {
    return keys_for(m_prefix, name);
  }

  std::string m_prefix;
};

} // namespace

std::unique_ptr<LockLayout>
rlock_layout(std::string prefix) {
  return std::make_unique<RlockLayout>(std::move(prefix));
}

} // namespace rlock::lock
