#include <rlock/lock/quorum_status.hpp>

#include <algorithm>
#include <map>
#include <utility>

namespace rlock::lock::quorum {

StatusSnapshot
merge_status(std::vector<ServerStatus> servers, int quorum) {
  StatusSnapshot merged;
  merged.servers = static_cast<int>(servers.size());
  merged.quorum = quorum;
  std::map<std::string, LockState> by_name;
  // Per name, per token: on how many servers, and one server's view.
  std::map<std::string, std::map<std::string, std::pair<int, LockState>>>
      tokens;
  for (auto& server : servers) {
    if (!server.error.empty()) {
      merged.unreachable.push_back(SilentNode{server.address, server.error});
      continue;
    }
    merged.server_now_ms =
        std::max(merged.server_now_ms, server.snapshot.server_now_ms);
    for (auto& lock : server.snapshot.locks) {
      auto& state = by_name[lock.name];
      state.name = lock.name;
      state.key = lock.key;
      if (!state.quorum) {
        state.quorum.emplace();
      }
      state.quorum->servers.push_back(ServerLockState{
          server.address, lock.held, lock.token, lock.ttl_ms, lock.fence, {}});
      if (lock.held) {
        auto& [count, sample] = tokens[lock.name][lock.token];
        if (count++ == 0) {
          sample = lock;
        }
      }
    }
  }
  for (auto& [name, state] : by_name) {
    // The servers that did not answer, too: a lock's count is out of all.
    for (const auto& silent : merged.unreachable) {
      state.quorum->servers.push_back(
          ServerLockState{silent.address, false, {}, -1, 0, silent.why});
    }
    const std::pair<int, LockState>* most = nullptr;
    for (const auto& [token, entry] : tokens[name]) {
      if (most == nullptr || entry.first > most->first) {
        most = &entry;
      }
    }
    if (most != nullptr) {
      auto view = std::move(state.quorum);
      state = most->second;
      state.quorum = std::move(view);
      state.quorum->agreed = most->first >= quorum;
    }
    merged.locks.push_back(std::move(state));
  }
  return merged;
}

std::optional<Slot>
latest_slot(const std::vector<Slot>& slots) {
  std::optional<Slot> latest;
  for (const auto& slot : slots) {
    if (!latest || slot.number > latest->number) {
      latest = slot;
    } else if (slot.number == latest->number) {
      latest->done = latest->done || slot.done;
      latest->left = std::min(latest->left, slot.left);
    }
  }
  return latest;
}

} // namespace rlock::lock::quorum
