#include <rlock/lock/quorum_acquire.hpp>

#include <algorithm>

namespace rlock::lock::quorum {

using std::chrono::milliseconds;

AcquireTally
tally_acquire(const std::vector<AcquireAnswer>& answers) {
  using Kind = AcquireAnswer::Kind;
  AcquireTally tally;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const auto& answer = answers[i];
    if (answer.start_unknown
        && (answer.kind == Kind::granted || answer.kind == Kind::busy)) {
      ++tally.start_unknown;
    }
    switch (answer.kind) {
    case Kind::unsent:
      break;
    case Kind::no_answer:
      tally.maybe.push_back(answer.member);
      break;
    case Kind::busy:
      tally.said_no.push_back(i);
      break;
    case Kind::granted:
      if (!answer.unconfirmed && !answer.held_back && !answer.start_unknown) {
        tally.granted.push_back(answer.member);
        tally.fences.push_back(answer.fence);
        break;
      }
      // A grant that does not count stands on that server: undone.
      tally.maybe.push_back(answer.member);
      if (answer.held_back || answer.start_unknown) {
        tally.said_no.push_back(i);
      }
      break;
    }
  }
  return tally;
}

Duration
clock_allowance(Duration ttl) {
  return ttl / 100 + milliseconds(2);
}

Duration
per_server_time(Duration ttl) {
  return std::min(k_longest_per_server, ttl / 20);
}

Duration
validity(Duration ttl, Duration elapsed, Duration allowance) {
  return ttl - elapsed - allowance;
}

std::vector<std::size_t>
undo_all(const AcquireTally& tally) {
  auto undo = tally.granted;
  undo.insert(undo.end(), tally.maybe.begin(), tally.maybe.end());
  return undo;
}

AcquireVerdict
judge_acquire(const AcquireTally& tally, int quorum, Duration validity) {
  AcquireVerdict verdict;
  if (tally.granted.empty()
      || static_cast<int>(tally.granted.size()) < quorum) {
    verdict.kind = AcquireVerdict::Kind::too_few;
    verdict.undo = undo_all(tally);
  } else if (validity <= Duration::zero()) {
    verdict.kind = AcquireVerdict::Kind::too_late;
    verdict.undo = undo_all(tally);
  } else {
    verdict.kind = AcquireVerdict::Kind::won;
    verdict.fence = *std::max_element(tally.fences.begin(), tally.fences.end());
    verdict.undo = tally.maybe;
  }
  return verdict;
}

bool
too_few_starts_known(const AcquireTally& tally, int servers, int quorum) {
  return servers - tally.start_unknown < quorum;
}

} // namespace rlock::lock::quorum
