#include <rlock/lock/quorum_counts.hpp>

#include <algorithm>
#include <limits>
#include <map>

namespace rlock::lock::quorum {

using std::chrono::milliseconds;

std::optional<Renewal>
count_renewal(const std::vector<RenewVote>& votes, int asked, int quorum) {
  std::vector<std::int64_t> before_ms;
  int lost = 0;
  for (const auto& vote : votes) {
    if (vote.kind == RenewVote::Kind::held) {
      before_ms.push_back(vote.remaining_before_ms);
    } else if (vote.kind != RenewVote::Kind::silent) {
      ++lost;
    }
  }
  Renewal renewal;
  renewal.confirmed = static_cast<int>(before_ms.size());
  if (renewal.confirmed >= quorum) {
    renewal.held = true;
    renewal.remaining_before_ms = quorum_remaining_ms(before_ms, quorum);
    return renewal;
  }
  if (asked - lost < quorum) {
    // Too few servers still hold it for any retry to reach a quorum.
    return renewal;
  }
  return std::nullopt;
}

std::int64_t
quorum_remaining_ms(std::vector<std::int64_t> held_ms, int quorum) {
  if (quorum <= 0 || static_cast<int>(held_ms.size()) < quorum) {
    return -2;
  }
  // Past the (held - quorum + 1)-th lease to end, fewer than a quorum hold.
  for (auto& ms : held_ms) {
    if (ms < 0) {
      ms = std::numeric_limits<std::int64_t>::max();
    }
  }
  std::sort(held_ms.begin(), held_ms.end());
  const auto at = held_ms[held_ms.size() - static_cast<std::size_t>(quorum)];
  return at == std::numeric_limits<std::int64_t>::max() ? -1 : at;
}

bool
restarted_since(const std::string& granted_run_id, const std::string& run_id) {
  return !granted_run_id.empty() && run_id != granted_run_id;
}

bool
split_vote(const std::vector<Busy>& busy, int silent, int quorum) {
  if (busy.empty()) {
    return false;
  }
  std::map<std::string, int> votes;
  int most = 0;
  for (const auto& attempt : busy) {
    if (!attempt.held_back.empty() || attempt.holder.empty()
        || attempt.place > 0 || attempt.limit_conflict) {
      return false;
    }
    most = std::max(most, ++votes[attempt.holder]);
  }
  return most + silent < quorum;
}

std::int64_t
split_backoff_span_ms(int splits, std::int64_t per_server_ms) {
  constexpr std::int64_t k_longest = 1000;
  std::int64_t span = std::max<std::int64_t>(2 * per_server_ms, 20);
  for (int i = 1; i < splits && span < k_longest; ++i) {
    span *= 2;
  }
  return std::min(span, k_longest);
}

Duration
down_for(int failures) {
  constexpr Duration k_first = milliseconds(100);
  constexpr Duration k_longest = milliseconds(2000);
  Duration down = k_first;
  for (int i = 1; i < failures && down < k_longest; ++i) {
    down *= 2;
  }
  return std::min(down, k_longest);
}

} // namespace rlock::lock::quorum
