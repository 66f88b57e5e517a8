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

Standing
count_release(int released, int silent, int quorum) {
  if (released == 0 && silent >= quorum) {
    return Standing::unknown;
  }
  return released + silent >= quorum && released > 0 ? Standing::held
                                                     : Standing::not_held;
}

CheckCount
count_check(const std::vector<std::int64_t>& held_ms,
            int lost,
            int servers,
            int quorum) {
  if (static_cast<int>(held_ms.size()) >= quorum) {
    return CheckCount{Standing::held, quorum_remaining_ms(held_ms, quorum)};
  }
  if (servers - lost < quorum) {
    return CheckCount{Standing::not_held};
  }
  return CheckCount{Standing::unknown};
}

bool
restarted_since(const std::string& granted_run_id, const std::string& run_id) {
  return !granted_run_id.empty() && run_id != granted_run_id;
}

bool
split_vote(const std::vector<BusyVote>& busy, int silent, int quorum) {
  if (busy.empty()) {
    return false;
  }
  std::map<std::string, int> votes;
  int most = 0;
  for (const auto& vote : busy) {
    if (!vote.held_back.empty() || vote.holder.empty() || vote.place > 0
        || vote.limit_conflict) {
      return false;
    }
    most = std::max(most, ++votes[vote.holder]);
  }
  return most + silent < quorum;
}

std::optional<std::size_t>
spokesman(const std::vector<BusyVote>& busy) {
  const auto said = [&](std::size_t i) {
    return busy[i].holder + '\n' + busy[i].held_back;
  };
  std::map<std::string, int> votes;
  std::optional<std::size_t> chosen;
  for (std::size_t i = 0; i < busy.size(); ++i) {
    const int count = ++votes[said(i)];
    if (!chosen || count > votes[said(*chosen)]) {
      chosen = i;
    }
  }
  return chosen;
}

std::int64_t
free_in_ms(std::vector<std::int64_t> held_ms, int free, int quorum) {
  const int more = quorum - free;
  if (more <= 0) {
    return 0;
  }
  if (static_cast<int>(held_ms.size()) < more) {
    return -1;
  }
  std::sort(held_ms.begin(), held_ms.end());
  const auto at = held_ms[static_cast<std::size_t>(more - 1)];
  return at < 0 ? -1 : at;
}

std::int64_t
not_won_retry_ms(const std::vector<BusyVote>& busy, int servers, int quorum) {
  // The servers that did not say "held" (free, slow or unreachable) may
  // grant it next time; the others free up as their leases end.
  std::vector<std::int64_t> held_ms;
  for (const auto& vote : busy) {
    held_ms.push_back(vote.retry_ms);
  }
  const int not_held = servers - static_cast<int>(busy.size());
  return free_in_ms(held_ms, not_held, quorum);
}

std::int64_t
retry_spread_ms(std::int64_t per_server_ms) {
  return std::max<std::int64_t>(2 * per_server_ms, 20);
}

int
meets_every_quorum(int servers, int quorum) {
  return servers - quorum + 1;
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
