// Redis Cluster's building blocks that need no socket: key slots, the slot
// map from CLUSTER SLOTS, MOVED and ASK redirections, and hash tags that keep
// every key of a lock in one slot.
#pragma once

#include <rlock/redis/reply.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/util/expected.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::redis {

inline constexpr int k_cluster_slots = 16384;

// Returns the slot of `key` (0 to 16383): CRC16 (XMODEM) mod 16384 of its
// hash tag, the bytes between the first '{' and the first '}' after it when
// there are any, else of the whole key (Redis Cluster specification).
int key_slot(std::string_view key);

// Slots first to last, both included.
struct SlotSpan {
  int first = 0;
  int last = 0;

  bool operator==(const SlotSpan&) const = default;
};

// Slots first to last and the nodes that serve them.
struct SlotRange {
  int first = 0;
  int last = 0;
  HostPort master;
  std::vector<HostPort> replicas;
};

// Which node serves which slot, as one node's CLUSTER SLOTS says.
struct SlotMap {
  std::vector<SlotRange> ranges; // by first slot; no two share a slot

  // Returns the master serving `slot`, or nullptr when no range covers it
  // (or it is not a slot).
  const HostPort* master_of(int slot) const;

  // Returns the spans of slots no range covers, in order: what a status or
  // doctor line names when the cluster is not fully covered.
  std::vector<SlotSpan> uncovered() const;

  // Returns every master once, in the order of their first slots.
  std::vector<HostPort> masters() const;
};

// Reads the reply to CLUSTER SLOTS sent to `asked`: an array of ranges
// [first, last, master, replica...], each node [host, port, id, metadata].
// A node whose host is nil or "" (unknown endpoint) is `asked`'s host; "?"
// (a node announcing hostnames without one) is the "ip" of its metadata,
// else `asked`'s host. A node with port 0 has no known address (a failed
// node, flagged noaddr): as a master its range is left out (uncovered), as
// a replica it is left out. Fails with the reason on an error reply, a reply of
// another shape, a slot outside 0-16383, a range whose first slot is after
// its last, ranges that overlap, or a port outside 1-65535.
Expected<SlotMap> parse_cluster_slots(const Reply& reply,
                                      const HostPort& asked);

// Returns "0-5460, 10923, 10925-16383", for messages.
std::string format_slot_spans(const std::vector<SlotSpan>& spans);

// A MOVED or ASK error: the slot lives (MOVED), or for this one command
// lives (ASK, send ASKING first), on another node.
struct Redirect {
  enum class Kind { moved, ask };

  Kind kind = Kind::moved;
  int slot = 0;
  // Redis prints IPv6 hosts without brackets ("::1:7000"); the host is
  // empty (or "?") when the server does not know the node's endpoint.
  HostPort node;

  // Returns the node to ask: `node`, on `answered`'s host when the server
  // did not know the node's endpoint (host "" or "?").
  HostPort target(const HostPort& answered) const;
};

// Reads an error reply's text "MOVED 3999 127.0.0.1:6381" or "ASK 3999
// ::1:6381"; returns nothing for any other text, and for a slot outside
// 0-16383 or a port outside 1-65535.
std::optional<Redirect> parse_redirect(std::string_view error);

// Returns a hash tag for lock `name` that holds no brace, so that the keys
// PREFIX{tag}, PREFIX{tag}:fence... share one slot: `name` itself when it is
// not empty and holds no '{', '}' or DEL (0x7F, which no valid lock name
// holds), else an escaped form (see cluster.cpp) that holds a DEL. Two names
// never give the same tag. (PREFIX must hold no brace either.)
std::string cluster_safe_tag(std::string_view name);

// Returns the name cluster_safe_tag() made `tag` from, or nothing when no
// name gives `tag`.
std::optional<std::string> name_of_cluster_tag(std::string_view tag);

} // namespace rlock::redis
