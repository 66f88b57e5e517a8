#pragma once

// What the files of the quorum store share (quorum_store.cpp and its
// quorum_store_*.cpp): bounds and small helpers over a round's answers
// (QuorumStore::Answer: templates, so that this header stands below
// quorum_store.hpp and no include circle forms). Not an interface: included
// by those files only.

#include <rlock/lock/quorum_acquire.hpp>
#include <rlock/util/duration.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace rlock::lock::quorum_parts {

using quorum::k_longest_per_server;
using std::chrono::milliseconds;
inline constexpr Duration k_undo_bound = std::chrono::seconds(1);
inline constexpr Duration k_status_bound = std::chrono::seconds(2);
// A step other than the acquire waits this long at most for the servers
// that are slow to answer: one frozen server must not hold up each step
// for the whole reply timeout.
inline constexpr Duration k_round_bound = std::chrono::seconds(1);
// A subscription that is not confirmed within this is left out: the
// waiter's timers cover what it would have heard.
inline constexpr Duration k_subscribe_bound = std::chrono::milliseconds(500);

// The reasons of the answers that do not count, joined.
template <typename Answer>
std::string
failures_text(const std::vector<Answer>& answers) {
  std::string text;
  for (const auto& answer : answers) {
    if (answer.failure) {
      text += (text.empty() ? "" : "; ") + std::string(answer.failure->what());
    }
  }
  return text;
}

// The servers of `answers` that replied.
template <typename Answer>
std::vector<std::size_t>
reachable(const std::vector<Answer>& answers) {
  std::vector<std::size_t> members;
  for (const auto& answer : answers) {
    if (answer.reply) {
      members.push_back(answer.member);
    }
  }
  return members;
}

// How many of `answers` have a reply.
template <typename Answer>
int
answered(const std::vector<Answer>& answers) {
  return static_cast<int>(
      std::count_if(answers.begin(), answers.end(), [](const auto& a) {
        return a.reply.has_value();
      }));
}

} // namespace rlock::lock::quorum_parts
