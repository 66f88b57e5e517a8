#include <rlock/redis/cluster.hpp>
#include <rlock/util/integer.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <array>
#include <cstdint>

namespace rlock::redis {

namespace {

// CRC16-CCITT as XMODEM computes it (polynomial 0x1021, initial value 0, no
// reflection), one table entry per byte value.
constexpr std::array<std::uint16_t, 256>
crc16_table() {
  std::array<std::uint16_t, 256> table{};
  for (unsigned byte = 0; byte < 256; ++byte) {
    unsigned crc = byte << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1;
    }
    table[byte] = static_cast<std::uint16_t>(crc);
  }
  return table;
}

constexpr auto k_crc16_table = crc16_table();

std::uint16_t
crc16(std::string_view bytes) {
  unsigned crc = 0;
  for (unsigned char byte : bytes) {
    crc = ((crc << 8) ^ k_crc16_table[((crc >> 8) ^ byte) & 0xFF]) & 0xFFFF;
  }
  return static_cast<std::uint16_t>(crc);
}

// The escape byte of cluster_safe_tag(): validate_name() refuses it in names.
constexpr char k_escape = '\x7F';

using SlotsResult = Expected<SlotMap>;

bool
is_slot(long long value) {
  return value >= 0 && value < k_cluster_slots;
}

bool
is_port(long long value) {
  return value >= 1 && value <= 65535;
}

// The value of key "ip" in a node's metadata ([key, value, ...]), or "".
std::string
metadata_ip(const Reply& node) {
  if (node.elements.size() < 4 || !node.elements[3].is_array()) {
    return {};
  }
  const auto& pairs = node.elements[3].elements;
  for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) {
    if (pairs[i].is_string() && pairs[i].text == "ip"
        && pairs[i + 1].is_string()) {
      return pairs[i + 1].text;
    }
  }
  return {};
}

// The host that clients should use for `node`, `asked`'s when its endpoint
// is unknown; "" when its host is neither a string nor nil.
std::string
node_host(const Reply& node, const HostPort& asked) {
  const auto& host = node.elements[0];
  if (host.is_nil() || (host.is_string() && host.text.empty())) {
    return asked.host;
  }
  if (!host.is_string()) {
    return {};
  }
  if (host.text == "?") {
    auto ip = metadata_ip(node);
    return ip.empty() ? asked.host : ip;
  }
  return host.text;
}

Expected<HostPort>
parse_node(const Reply& node, const HostPort& asked) {
  using Result = Expected<HostPort>;
  if (!node.is_array() || node.elements.size() < 2) {
    return Result::failure("a node is not an array [host, port, ...]");
  }
  HostPort result;
  result.host = node_host(node, asked);
  if (result.host.empty()) {
    return Result::failure("a node's host is not a string");
  }
  const auto& port = node.elements[1];
  // Port 0: a node whose address is unknown (a failed node flagged noaddr).
  if (port.type != Reply::Type::integer
      || (!is_port(port.integer) && port.integer != 0)) {
    return Result::failure("a node's port is not a port");
  }
  result.port = static_cast<int>(port.integer);
  return result;
}

Expected<SlotRange>
parse_range(const Reply& range, const HostPort& asked) {
  using Result = Expected<SlotRange>;
  if (!range.is_array() || range.elements.size() < 3) {
    return Result::failure("a range is not an array [first, last, master...]");
  }
  const auto& first = range.elements[0];
  const auto& last = range.elements[1];
  if (first.type != Reply::Type::integer || last.type != Reply::Type::integer
      || !is_slot(first.integer) || !is_slot(last.integer)) {
    return Result::failure("a range's slots are not slots");
  }
  if (first.integer > last.integer) {
    return Result::failure("range " + std::to_string(first.integer) + "-"
                           + std::to_string(last.integer) + " ends before it "
                           + "starts");
  }
  SlotRange result;
  result.first = static_cast<int>(first.integer);
  result.last = static_cast<int>(last.integer);
  for (std::size_t i = 2; i < range.elements.size(); ++i) {
    auto node = parse_node(range.elements[i], asked);
    if (!node) {
      return Result::failure(node.error());
    }
    if (i == 2) {
      result.master = node.value();
    } else if (node.value().port != 0) {
      result.replicas.push_back(node.value());
    }
  }
  return result;
}

// Sorts `map`'s ranges; fails when two share a slot.
SlotsResult
sorted(SlotMap map) {
  auto& ranges = map.ranges;
  std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) {
    return a.first < b.first;
  });
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first <= ranges[i - 1].last) {
      return SlotsResult::failure(
          "ranges "
          + format_slot_spans({{ranges[i - 1].first, ranges[i - 1].last}})
          + " and " + format_slot_spans({{ranges[i].first, ranges[i].last}})
          + " overlap");
    }
  }
  return map;
}

// Reads a decimal number of at most 5 digits, without a sign; -1 otherwise.
int
small_number(std::string_view text) {
  if (text.empty() || text.size() > 5 || text.front() < '0'
      || text.front() > '9') {
    return -1;
  }
  return static_cast<int>(parse_integer(text).value_or(-1));
}

} // namespace

int
key_slot(std::string_view key) {
  const auto open = key.find('{');
  if (open != std::string_view::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16(key) % k_cluster_slots;
}

const HostPort*
SlotMap::master_of(int slot) const {
  const auto after = std::upper_bound(
      ranges.begin(), ranges.end(), slot, [](int s, const SlotRange& range) {
        return s < range.first;
      });
  if (after == ranges.begin()) {
    return nullptr;
  }
  const auto& range = *(after - 1);
  return slot <= range.last ? &range.master : nullptr;
}

std::vector<SlotSpan>
SlotMap::uncovered() const {
  std::vector<SlotSpan> spans;
  int next = 0;
  for (const auto& range : ranges) {
    if (range.first > next) {
      spans.push_back({next, range.first - 1});
    }
    next = std::max(next, range.last + 1);
  }
  if (next < k_cluster_slots) {
    spans.push_back({next, k_cluster_slots - 1});
  }
  return spans;
}

std::vector<HostPort>
SlotMap::masters() const {
  std::vector<HostPort> result;
  for (const auto& range : ranges) {
    if (std::find(result.begin(), result.end(), range.master) == result.end()) {
      result.push_back(range.master);
    }
  }
  return result;
}

Expected<SlotMap>
parse_cluster_slots(const Reply& reply, const HostPort& asked) {
  if (reply.is_error()) {
    return SlotsResult::failure(reply.text.empty() ? "an empty error reply"
                                                   : printable(reply.text));
  }
  if (!reply.is_array()) {
    return SlotsResult::failure("the reply is not an array of slot ranges");
  }
  SlotMap map;
  for (const auto& element : reply.elements) {
    auto range = parse_range(element, asked);
    if (!range) {
      return SlotsResult::failure(range.error());
    }
    // A master with no address serves nobody: its slots are uncovered.
    if (range.value().master.port != 0) {
      map.ranges.push_back(range.value());
    }
  }
  return sorted(std::move(map));
}

std::string
format_slot_spans(const std::vector<SlotSpan>& spans) {
  std::string result;
  for (const auto& span : spans) {
    result += result.empty() ? "" : ", ";
    result += std::to_string(span.first);
    if (span.last != span.first) {
      result += "-" + std::to_string(span.last);
    }
  }
  return result;
}

HostPort
Redirect::target(const HostPort& answered) const {
  if (node.host.empty() || node.host == "?") {
    return {answered.host, node.port};
  }
  return node;
}

std::optional<Redirect>
parse_redirect(std::string_view error) {
  Redirect redirect;
  if (error.starts_with("MOVED ")) {
    error.remove_prefix(6);
  } else if (error.starts_with("ASK ")) {
    redirect.kind = Redirect::Kind::ask;
    error.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const auto space = error.find(' ');
  const auto colon = error.rfind(':');
  if (space == std::string_view::npos || colon == std::string_view::npos
      || colon < space) {
    return std::nullopt;
  }
  const auto slot = small_number(error.substr(0, space));
  const auto port = small_number(error.substr(colon + 1));
  auto host = error.substr(space + 1, colon - space - 1);
  if (!is_slot(slot) || !is_port(port)
      || host.find_first_of(" \r\n") != std::string_view::npos) {
    return std::nullopt;
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  redirect.slot = slot;
  redirect.node = {std::string(host), port};
  return redirect;
}

// cluster_safe_tag(n) is n itself when n is in V+, V being every byte but
// '{', '}' and DEL (the escape byte); otherwise it is esc(n): DEL alone for
// the empty name, else each byte c of n replaced by code(c), where
// code('{') = DEL '(', code('}') = DEL ')', code(DEL) = DEL DEL and
// code(c) = c for c in V.
//
// It holds no brace: V has none, nor do the codes.
//
// It is injective:
// - esc is injective on non-empty names: the codes form a prefix code (the
//   one-byte codes are bytes of V, which is not DEL; the two-byte codes start
//   with DEL and differ in their second byte), so a concatenation of codes
//   splits into codes one way only, and code() is injective. DEL alone is no
//   concatenation of codes (every code starting with DEL has two bytes), so
//   esc("") differs from esc of every other name.
// - The two branches never meet: a name not in V+ is empty or holds a '{',
//   '}' or DEL, so esc() of it holds a DEL, while a name in V+ is its own tag
//   and holds none.
// Hence two different names never give the same tag; and since validate_name
// refuses DEL in names, the escaped form of a name with a brace is never the
// tag of a brace-free name. name_of_cluster_tag() reads the codes back.
std::string
cluster_safe_tag(std::string_view name) {
  if (!name.empty() && name.find_first_of("{}\x7F") == std::string_view::npos) {
    return std::string(name);
  }
  std::string tag(1, k_escape);
  if (name.empty()) {
    return tag;
  }
  tag.clear();
  for (char c : name) {
    if (c == '{' || c == '}' || c == k_escape) {
      tag += k_escape;
      tag += c == '{' ? '(' : c == '}' ? ')' : k_escape;
    } else {
      tag += c;
    }
  }
  return tag;
}

std::optional<std::string>
name_of_cluster_tag(std::string_view tag) {
  if (tag.find_first_of("{}") != std::string_view::npos || tag.empty()) {
    return std::nullopt;
  }
  if (tag == std::string_view(&k_escape, 1)) {
    return std::string();
  }
  std::string name;
  for (std::size_t i = 0; i < tag.size(); ++i) {
    if (tag[i] != k_escape) {
      name += tag[i];
      continue;
    }
    if (++i == tag.size()) {
      return std::nullopt;
    }
    switch (tag[i]) {
    case '(':
      name += '{';
      break;
    case ')':
      name += '}';
      break;
    case k_escape:
      name += k_escape;
      break;
    default:
      return std::nullopt;
    }
  }
  return name;
}

} // namespace rlock::redis
