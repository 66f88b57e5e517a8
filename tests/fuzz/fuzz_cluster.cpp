// redis/cluster.hpp on arbitrary bytes; the first byte picks what they are:
// - the replies ReplyReader parses from them, each read by
//   parse_cluster_slots: a map it accepts is sorted, in range, without
//   overlaps, and master_of() and uncovered() agree with its ranges;
// - an error text for parse_redirect: a redirect it reads is in range and
//   reads back the same when printed again;
// - a key or name: key_slot agrees with a bit-by-bit CRC16 of the tag found
//   the slow way, cluster_safe_tag() gives a tag without braces that
//   name_of_cluster_tag() reads back (so no two names share a tag) and whose
//   lock keys share one slot, and a tag name_of_cluster_tag() reads is the
//   one cluster_safe_tag() gives.
#include <rlock/redis/cluster.hpp>
#include <rlock/redis/reply_reader.hpp>
#include <rlock/store/keys.hpp>

#include "fuzz.hpp"
#include <algorithm>
#include <cstdint>

using namespace rlock;

namespace {

const redis::HostPort k_asked{"asked.example", 7000};

bool
valid_node(const redis::HostPort& node) {
  return !node.host.empty() && node.port >= 1 && node.port <= 65535;
}

void
check_ranges(const redis::SlotMap& map) {
  int next = 0;
  for (const auto& range : map.ranges) {
    if (range.first < next || range.first > range.last
        || range.last >= redis::k_cluster_slots) {
      fuzz::finding("a slot map's ranges are out of order or range");
    }
    next = range.last + 1;
    if (!valid_node(range.master)) {
      fuzz::finding("a master is not a node", range.master.address());
    }
    for (const auto& replica : range.replicas) {
      if (!valid_node(replica)) {
        fuzz::finding("a replica is not a node", replica.address());
      }
    }
    if (map.master_of(range.first) != &range.master
        || map.master_of(range.last) != &range.master) {
      fuzz::finding("master_of does not find a range's master");
    }
  }
}

void
check_coverage(const redis::SlotMap& map) {
  int slots = 0;
  for (const auto& span : map.uncovered()) {
    if (map.master_of(span.first) != nullptr
        || map.master_of(span.last) != nullptr) {
      fuzz::finding("an uncovered slot has a master");
    }
    slots += span.last - span.first + 1;
  }
  for (const auto& range : map.ranges) {
    slots += range.last - range.first + 1;
  }
  if (slots != redis::k_cluster_slots) {
    fuzz::finding("covered and uncovered slots do not add up",
                  std::to_string(slots));
  }
  const auto spans = redis::format_slot_spans(map.uncovered());
  if (!fuzz::is_one_line(spans)) {
    fuzz::finding("format_slot_spans is not one line", spans);
  }
}

void
check_masters(const redis::SlotMap& map) {
  const auto masters = map.masters();
  for (std::size_t i = 0; i < masters.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (masters[i] == masters[j]) {
        fuzz::finding("masters() lists a node twice", masters[i].address());
      }
    }
  }
  for (const auto& range : map.ranges) {
    if (std::find(masters.begin(), masters.end(), range.master)
        == masters.end()) {
      fuzz::finding("masters() misses one", range.master.address());
    }
  }
}

void
slots(std::string_view bytes) {
  redis::ReplyReader reader;
  try {
    reader.feed(bytes);
    while (auto reply = reader.next()) {
      const auto map = redis::parse_cluster_slots(*reply, k_asked);
      if (!map) {
        if (!fuzz::is_one_line(map.error()) || map.error().empty()) {
          fuzz::finding("a reason is not one line", map.error());
        }
        continue;
      }
      check_ranges(map.value());
      check_coverage(map.value());
      check_masters(map.value());
    }
  } catch (const redis::ProtocolError&) {
    // Bytes that are not the protocol end the replies.
  }
}

void
redirect(std::string_view text) {
  const auto redirect = redis::parse_redirect(text);
  if (!redirect) {
    return;
  }
  const bool moved = redirect->kind == redis::Redirect::Kind::moved;
  if (!text.starts_with(moved ? "MOVED " : "ASK ")) {
    fuzz::finding("a redirect of the wrong kind", text);
  }
  if (redirect->slot < 0 || redirect->slot >= redis::k_cluster_slots
      || redirect->node.port < 1 || redirect->node.port > 65535
      || redirect->node.host.find_first_of(" \r\n") != std::string::npos) {
    fuzz::finding("a redirect out of range", text);
  }
  const auto again = redis::parse_redirect(
      std::string(moved ? "MOVED " : "ASK ") + std::to_string(redirect->slot)
      + " [" + redirect->node.host
      + "]:" + std::to_string(redirect->node.port));
  if (!again || again->kind != redirect->kind || again->slot != redirect->slot
      || !(again->node == redirect->node)) {
    fuzz::finding("a redirect does not read back the same", text);
  }
  if (!valid_node(redirect->target(k_asked))) {
    fuzz::finding("a redirect's target is not a node", text);
  }
}

// The slot the slow way: the tag by the specification's words, CRC16 bit by
// bit.
int
reference_slot(std::string_view key) {
  std::size_t open = 0;
  while (open < key.size() && key[open] != '{') {
    ++open;
  }
  std::size_t close = open + 1;
  while (close < key.size() && key[close] != '}') {
    ++close;
  }
  if (open < key.size() && close < key.size() && close > open + 1) {
    key = key.substr(open + 1, close - open - 1);
  }
  std::uint16_t crc = 0;
  for (unsigned char byte : key) {
    crc ^= static_cast<std::uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021
                                                      : crc << 1);
    }
  }
  return crc % redis::k_cluster_slots;
}

void
check_tag(std::string_view name) {
  const auto tag = redis::cluster_safe_tag(name);
  if (tag.find_first_of("{}") != std::string::npos) {
    fuzz::finding("a tag holds a brace", tag);
  }
  if (redis::name_of_cluster_tag(tag) != std::string(name)) {
    fuzz::finding("a tag does not read back as its name", tag);
  }
  const bool plain =
      !name.empty() && name.find_first_of("{}\x7F") == std::string_view::npos;
  if (plain != (tag == name)) {
    fuzz::finding("a tag is the name exactly when it need not change", tag);
  }
  const auto keys = lock::keys_for("rlock:", tag);
  const auto slot = redis::key_slot(keys.lock);
  for (const auto& key : keys.script_keys()) {
    if (redis::key_slot(key) != slot) {
      fuzz::finding("a lock's keys are in different slots", key);
    }
  }
}

void
key(std::string_view bytes) {
  const auto slot = redis::key_slot(bytes);
  if (slot != reference_slot(bytes)) {
    fuzz::finding("key_slot disagrees with the reference", bytes);
  }
  check_tag(bytes);
  const auto name = redis::name_of_cluster_tag(bytes);
  if (name && redis::cluster_safe_tag(*name) != bytes) {
    fuzz::finding("a tag read as a name does not give that tag", bytes);
  }
}

} // namespace

// As fuzz_reply: hiredis 0.14 would allocate a huge array for a count
// ReplyLimits refuses; any allocation above 256 MB is a finding.
extern "C" const char*
__asan_default_options() {
  return "max_allocation_size_mb=256";
}

extern "C" int
LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1,
                               size - 1);
  switch (data[0] % 3) {
  case 0:
    slots(bytes);
    break;
  case 1:
    redirect(bytes);
    break;
  default:
    key(bytes);
    break;
  }
  return 0;
}
