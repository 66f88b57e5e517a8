// The quorum store's read-only views for status and doctor: every server
// asked in turn, each bounded, and what they say merged
// (quorum::merge_status()).

#include <rlock/lock/quorum_status.hpp>
#include <rlock/store/quorum_store.hpp>
#include <rlock/store/quorum_store_parts.hpp>

namespace rlock::lock {

using namespace quorum_parts;

StatusSnapshot
QuorumStore::read_locks(const std::vector<std::string>& names) {
  return gather([&](LockStore& store) { return store.read_locks(names); });
}

StatusSnapshot
QuorumStore::list_locks(std::string_view match) {
  return gather([&](LockStore& store) { return store.list_locks(match); });
}

template <typename Read>
StatusSnapshot
QuorumStore::gather(Read&& read) {
  std::vector<StatusSnapshot> snapshots;
  std::vector<std::string> errors;
  for (std::size_t i = 0; i < m_members.size(); ++i) {
    auto& store = viewer(i);
    store.set_deadline(m_deadline ? m_deadline
                                  : std::optional(boot_now() + k_status_bound));
    try {
      snapshots.push_back(read(store));
      errors.emplace_back();
    } catch (const redis::Failure& failure) {
      snapshots.emplace_back();
      errors.emplace_back(failure.what());
    }
    store.set_deadline(m_deadline);
  }
  return merge_snapshots(std::move(snapshots), errors);
}

StatusSnapshot
QuorumStore::merge_snapshots(std::vector<StatusSnapshot> snapshots,
                             const std::vector<std::string>& errors) const {
  std::vector<quorum::ServerStatus> servers;
  for (std::size_t i = 0; i < snapshots.size(); ++i) {
    servers.push_back(quorum::ServerStatus{
        store_address(i), std::move(snapshots[i]), errors[i]});
  }
  return quorum::merge_status(std::move(servers), m_quorum);
}

std::vector<ServerFacts>
QuorumStore::examine() {
  std::vector<ServerFacts> facts;
  for (std::size_t i = 0; i < m_members.size(); ++i) {
    auto& store = *m_members[i].store;
    store.set_deadline(boot_now() + k_status_bound);
    try {
      auto found = store.examine();
      facts.insert(facts.end(), found.begin(), found.end());
    } catch (const redis::Failure& failure) {
      ServerFacts silent;
      silent.address = store_address(i);
      silent.info_error = failure.what();
      facts.push_back(std::move(silent));
    }
    store.set_deadline(m_deadline);
  }
  return facts;
}

std::optional<DeploymentState>
QuorumStore::deployment_state() {
  QuorumDeploymentState state;
  state.quorum = m_quorum;
  for (std::size_t i = 0; i < m_members.size(); ++i) {
    auto& store = *m_members[i].store;
    store.set_deadline(boot_now() + k_status_bound);
    QuorumServer server{store_address(i), {}};
    try {
      store.connect();
    } catch (const redis::Failure& failure) {
      server.error = failure.what();
    }
    store.set_deadline(m_deadline);
    state.servers.push_back(std::move(server));
  }
  return state;
}

} // namespace rlock::lock
