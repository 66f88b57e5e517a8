#pragma once

#include <rlock/lock/lease.hpp>

#include <optional>
#include <string>
#include <vector>

// How the quorum store (lock/quorum_store.cpp) merges what each server says
// about its locks for status, and the --once-per slot. Pure, unit-tested in
// test_lock_quorum_status.
namespace rlock::lock::quorum {

// What one server said to a status read: its snapshot, or why it did not
// answer.
struct ServerStatus {
  std::string address;
  StatusSnapshot snapshot;
  std::string error; // "" when it answered
};

// Merges the servers' snapshots lock by lock, in name order: each lock
// lists every server's view (those that did not answer too, as not held,
// with why), and is described as the token on the most servers holds it
// (on a tie, the first in token order), `quorum` set when that token holds
// it on at least `quorum` servers. The servers that did not answer are
// `unreachable`; the server clock is the latest of those that did.
StatusSnapshot merge_status(std::vector<ServerStatus> servers, int quorum);

// The --once-per slot the servers say it is: the latest any is in; done
// when any recorded a success in it (mark_slot_done() writes to enough
// servers for every quorum to include one), left the least any says.
// Nothing when no server answered.
std::optional<Slot> latest_slot(const std::vector<Slot>& slots);

} // namespace rlock::lock::quorum
