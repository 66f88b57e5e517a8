#include <rlock/redis/cluster.hpp>
#include <rlock/store/cluster_store.hpp>
#include <rlock/store/discovering_store.hpp>
#include <rlock/store/keys.hpp>

#include <catch2/catch.hpp>

#include "replies.hpp"
#include <set>

using rlock::lock::cluster_mode_of;
using rlock::lock::map_read_order;
using rlock::redis::cluster_safe_tag;
using rlock::redis::ClusterSeeds;
using rlock::redis::format_slot_spans;
using rlock::redis::HostPort;
using rlock::redis::key_slot;
using rlock::redis::name_of_cluster_tag;
using rlock::redis::parse_cluster_slots;
using rlock::redis::parse_redirect;
using rlock::redis::Redirect;
using rlock::redis::SlotMap;
using rlock::redis::SlotSpan;
using namespace test_replies;

namespace {

const HostPort k_asked{"seed.example", 7000};

// A node as CLUSTER SLOTS lists it: [host, port, id, metadata].
Reply
node(Reply host, long long port, std::vector<Reply> metadata = {}) {
  return array({std::move(host),
                integer(port),
                bulk("ddd6442e545c086dfa5a9efaee324ae3a3e6366d"),
                array(std::move(metadata))});
}

Reply
node(const std::string& host, long long port) {
  return node(bulk(host), port);
}

Reply
range(long long first, long long last, std::vector<Reply> nodes) {
  std::vector<Reply> elements{integer(first), integer(last)};
  for (auto& n : nodes) {
    elements.push_back(std::move(n));
  }
  return array(std::move(elements));
}

// What a three-master cluster with one replica each answered (redis-server
// 7.0.15, `redis-cli --cluster create ... --cluster-replicas 1`).
Reply
three_masters() {
  return array({
      range(0, 5460, {node("127.0.0.1", 31485), node("127.0.0.1", 31490)}),
      range(5461, 10922, {node("127.0.0.1", 31486), node("127.0.0.1", 31488)}),
      range(10923, 16383, {node("127.0.0.1", 31487), node("127.0.0.1", 31489)}),
  });
}

SlotMap
parsed(const Reply& reply) {
  auto map = parse_cluster_slots(reply, k_asked);
  REQUIRE(map);
  return map.value();
}

std::string
failure_of(const Reply& reply) {
  auto map = parse_cluster_slots(reply, k_asked);
  REQUIRE_FALSE(map);
  return map.error();
}

} // namespace

TEST_CASE("key_slot: the values redis-server's CLUSTER KEYSLOT gives",
          "[cluster]") {
  // From redis-server 7.0.15 with cluster-enabled yes.
  CHECK(key_slot("foo") == 12182);
  CHECK(key_slot("bar") == 5061);
  CHECK(key_slot("123456789") == 12739);
  CHECK(key_slot("") == 0);
  CHECK(key_slot("a") == 15495);
  CHECK(key_slot(std::string(1000, 'k')) == 15858);
  std::string digits;
  for (int i = 0; i < 100; ++i) {
    digits += "0123456789";
  }
  CHECK(key_slot(digits) == 14898);
  CHECK(key_slot("\xff\x80"
                 "abc")
        == 6721);
  CHECK(key_slot("caf\xc3\xa9") == 5735);
  CHECK(key_slot("\xff") == 7920);
}

TEST_CASE("key_slot: hash tags as the Cluster specification reads them",
          "[cluster]") {
  CHECK(key_slot("{user1000}.following") == 3443);
  CHECK(key_slot("{user1001}.followers") == 7506);
  // An empty tag: the whole key.
  CHECK(key_slot("foo{}{bar}") == 8363);
  CHECK(key_slot("{}") == 15257);
  CHECK(key_slot("{}{a}") == 13650);
  CHECK(key_slot("rlock:{}") == 3582);
  // The tag runs from the first '{' to the first '}' after it: "{bar".
  CHECK(key_slot("foo{{bar}}zap") == 4015);
  CHECK(key_slot("{{}}") == 4092);
  // Only the first tag counts: "bar".
  CHECK(key_slot("foo{bar}{zap}") == 5061);
  // A '}' before the first '{' does not count.
  CHECK(key_slot("}{a}") == 15495);
  CHECK(key_slot("{a}") == 15495);
  // No '}' after the '{': the whole key.
  CHECK(key_slot("{") == 4092);
  CHECK(key_slot("{a") == 10276);
  CHECK(key_slot("a}") == 5921);
  CHECK(key_slot("}") == 12090);
  CHECK(key_slot("x{y}z") == 12222);
  CHECK(key_slot("{y}") == 12222);
  CHECK(key_slot("{\xff}x") == 7920);
  CHECK(key_slot("rlock:{a{b}") == 13340);
  CHECK(key_slot("rlock:{a{b}:fence") == 13340);
}

TEST_CASE("parse_cluster_slots reads what a cluster answered", "[cluster]") {
  const auto map = parsed(three_masters());
  REQUIRE(map.ranges.size() == 3);
  CHECK(map.ranges[1].first == 5461);
  CHECK(map.ranges[1].last == 10922);
  CHECK(map.ranges[1].master == HostPort{"127.0.0.1", 31486});
  CHECK(map.ranges[1].replicas == std::vector<HostPort>{{"127.0.0.1", 31488}});
  CHECK(map.uncovered().empty());
  CHECK(map.masters()
        == std::vector<HostPort>{
            {"127.0.0.1", 31485}, {"127.0.0.1", 31486}, {"127.0.0.1", 31487}});
}

TEST_CASE("parse_cluster_slots: nodes of two elements, no replicas, any order",
          "[cluster]") {
  const auto map = parsed(array({
      range(100, 199, {array({bulk("b"), integer(2)})}),
      range(0, 99, {array({bulk("a"), integer(1)})}),
      range(200, 200, {array({bulk("a"), integer(1)})}),
  }));
  REQUIRE(map.ranges.size() == 3);
  CHECK(map.ranges[0].first == 0);
  CHECK(map.ranges[0].replicas.empty());
  CHECK(map.ranges[2].first == 200);
  CHECK(map.masters() == std::vector<HostPort>{{"a", 1}, {"b", 2}});
}

TEST_CASE("parse_cluster_slots: an unknown endpoint is the node asked",
          "[cluster]") {
  const std::vector<Reply> ip{bulk("ip"), bulk("10.0.0.2")};
  // cluster-preferred-endpoint-type unknown-endpoint: nil hosts.
  auto map = parsed(array({range(0, 16383, {node(nil(), 7001, ip)})}));
  CHECK(map.ranges[0].master == HostPort{"seed.example", 7001});
  // A node that does not know its own address: "".
  map = parsed(array({range(0, 16383, {node("", 7002)})}));
  CHECK(map.ranges[0].master == HostPort{"seed.example", 7002});
  // Hostnames preferred but none announced: "?", with the ip in the metadata
  // when there is one.
  map = parsed(array({range(0, 16383, {node(bulk("?"), 7003, ip)})}));
  CHECK(map.ranges[0].master == HostPort{"10.0.0.2", 7003});
  map = parsed(array({range(0, 16383, {node("?", 7004)})}));
  CHECK(map.ranges[0].master == HostPort{"seed.example", 7004});
  map = parsed(array({range(
      0,
      16383,
      {node(bulk("?"), 7005, {bulk("hostname"), bulk("h"), integer(1)})})}));
  CHECK(map.ranges[0].master == HostPort{"seed.example", 7005});
  map = parsed(array(
      {range(0,
             16383,
             {node(bulk("?"), 7006, {integer(1), bulk("ip"), bulk("x")})})}));
  CHECK(map.ranges[0].master == HostPort{"seed.example", 7006});
  // An announced hostname is the host.
  map = parsed(
      array({range(0, 16383, {node(bulk("node-b.example"), 7007, ip)})}));
  CHECK(map.ranges[0].master == HostPort{"node-b.example", 7007});
  map = parsed(array({range(0, 16383, {node("::1", 7008)})}));
  CHECK(map.ranges[0].master.address() == "[::1]:7008");
}

TEST_CASE("parse_cluster_slots: no ranges is a map that covers nothing",
          "[cluster]") {
  const auto map = parsed(array({}));
  CHECK(map.ranges.empty());
  CHECK(map.masters().empty());
  CHECK(map.master_of(0) == nullptr);
  CHECK(map.uncovered() == std::vector<SlotSpan>{{0, 16383}});
}

TEST_CASE("parse_cluster_slots fails on an error reply with its text",
          "[cluster]") {
  CHECK(failure_of(error("ERR This instance has cluster support disabled"))
        == "ERR This instance has cluster support disabled");
  CHECK(failure_of(error("ERR a\nb")) == "ERR a\\nb");
  CHECK(failure_of(error("")) == "an empty error reply");
}

TEST_CASE("parse_cluster_slots fails on a reply of another shape",
          "[cluster]") {
  const auto ok = node("h", 1);
  const std::vector<Reply> bad{
      nil(),
      integer(3),
      bulk("0 16383 h 1"),
      status("OK"),
      Reply{Reply::Type::other, "x", 0, {}, {}},
      // a range that is not an array, or too short
      array({integer(0)}),
      array({nil()}),
      array({array({})}),
      array({array({integer(0), integer(16383)})}),
      // slots that are not integers
      array({array({bulk("0"), integer(16383), ok})}),
      array({array({integer(0), nil(), ok})}),
      array({array({array({integer(0)}), integer(16383), ok})}),
      // nodes that are not [host, port, ...]
      array({range(0, 16383, {nil()})}),
      array({range(0, 16383, {bulk("h:1")})}),
      array({range(0, 16383, {array({})})}),
      array({range(0, 16383, {array({bulk("h")})})}),
      array({range(0, 16383, {array({integer(1), integer(1)})})}),
      array({range(0, 16383, {array({array({bulk("h")}), integer(1)})})}),
      array({range(0, 16383, {array({error("ERR"), integer(1)})})}),
      array({range(0, 16383, {array({bulk("h"), bulk("1")})})}),
      array({range(0, 16383, {array({bulk("h"), nil()})})}),
      array({range(0, 16383, {array({bulk("h"), array({integer(1)})})})}),
      // a bad replica spoils the range
      array({range(0, 16383, {ok, nil()})}),
      array({range(0, 16383, {ok, node("r", 65536)})}),
      // nested deeper than CLUSTER SLOTS goes
      array({array({three_masters()})}),
      array({three_masters()}),
  };
  for (const auto& reply : bad) {
    CHECK_FALSE(parse_cluster_slots(reply, k_asked));
  }
  // CLUSTER SLOTS sends hosts as bulk strings; nothing else is a host.
  CHECK_FALSE(parse_cluster_slots(
      array({range(0, 16383, {array({status("h"), integer(1)})})}), k_asked));
}

TEST_CASE("parse_cluster_slots leaves out nodes without an address (port 0)",
          "[cluster]") {
  // Redis 7.0 lists a failed master it has no address for as ":0".
  const auto map = parse_cluster_slots(
      array({range(0, 5460, {node("", 0)}),
             range(5461, 16383, {node("h", 7001), node("", 0)})}),
      k_asked);
  REQUIRE(map);
  REQUIRE(map.value().ranges.size() == 1);
  CHECK(map.value().ranges[0].replicas.empty());
  CHECK(map.value().master_of(0) == nullptr);
  CHECK(map.value().uncovered() == std::vector<SlotSpan>{{0, 5460}});
}

TEST_CASE("parse_cluster_slots fails on slots and ports out of range",
          "[cluster]") {
  const auto ok = node("h", 6379);
  CHECK(failure_of(array({range(-1, 10, {ok})}))
        == "a range's slots are not slots");
  CHECK_FALSE(parse_cluster_slots(array({range(0, 16384, {ok})}), k_asked));
  CHECK_FALSE(parse_cluster_slots(array({range(16384, 16384, {ok})}), k_asked));
  CHECK_FALSE(parse_cluster_slots(array({range(0, 1LL << 40, {ok})}), k_asked));
  CHECK_FALSE(
      parse_cluster_slots(array({range(-(1LL << 62), 16383, {ok})}), k_asked));
  CHECK(failure_of(array({range(10, 9, {ok})}))
        == "range 10-9 ends before it starts");
  for (long long port : {-1LL, 65536LL, 1LL << 32, -(1LL << 32)}) {
    CHECK(failure_of(array({range(0, 16383, {node("h", port)})}))
          == "a node's port is not a port");
  }
  CHECK(parse_cluster_slots(array({range(0, 0, {node("h", 1)})}), k_asked));
  CHECK(parse_cluster_slots(array({range(16383, 16383, {node("h", 65535)})}),
                            k_asked));
}

TEST_CASE("parse_cluster_slots fails on ranges that overlap", "[cluster]") {
  const auto ok = node("h", 6379);
  CHECK(failure_of(array({range(0, 100, {ok}), range(100, 200, {ok})}))
        == "ranges 0-100 and 100-200 overlap");
  CHECK(failure_of(array({range(50, 60, {ok}), range(0, 100, {ok})}))
        == "ranges 0-100 and 50-60 overlap");
  CHECK(failure_of(array({range(7, 7, {ok}), range(7, 7, {ok})}))
        == "ranges 7 and 7 overlap");
  CHECK(parse_cluster_slots(array({range(0, 99, {ok}), range(100, 200, {ok})}),
                            k_asked));
}

TEST_CASE("SlotMap::master_of finds a slot's master, nullptr outside the map",
          "[cluster]") {
  const auto map = parsed(array({
      range(0, 99, {node("a", 1)}),
      range(200, 299, {node("b", 2)}),
      range(300, 300, {node("a", 1)}),
  }));
  CHECK(*map.master_of(0) == HostPort{"a", 1});
  CHECK(*map.master_of(99) == HostPort{"a", 1});
  CHECK(map.master_of(100) == nullptr);
  CHECK(map.master_of(199) == nullptr);
  CHECK(*map.master_of(200) == HostPort{"b", 2});
  CHECK(*map.master_of(299) == HostPort{"b", 2});
  CHECK(*map.master_of(300) == HostPort{"a", 1});
  CHECK(map.master_of(301) == nullptr);
  CHECK(map.master_of(16383) == nullptr);
  CHECK(map.master_of(-1) == nullptr);
  CHECK(map.master_of(16384) == nullptr);
  CHECK(map.master_of(1 << 30) == nullptr);

  const auto full = parsed(three_masters());
  CHECK(full.master_of(key_slot("foo"))->port == 31487);
  CHECK(full.master_of(key_slot("bar"))->port == 31485);
  CHECK(key_slot("zzz") == 10118);
  CHECK(full.master_of(key_slot("zzz"))->port == 31486);
  CHECK(full.master_of(16383)->port == 31487);
  CHECK(full.master_of(-1) == nullptr);
  CHECK(full.master_of(16384) == nullptr);
}

TEST_CASE("SlotMap::uncovered names the slots no range covers", "[cluster]") {
  const auto map = parsed(array({
      range(1, 99, {node("a", 1)}),
      range(200, 299, {node("b", 2)}),
      range(300, 16382, {node("a", 1)}),
  }));
  const std::vector<SlotSpan> expected{{0, 0}, {100, 199}, {16383, 16383}};
  CHECK(map.uncovered() == expected);
  CHECK(format_slot_spans(map.uncovered()) == "0, 100-199, 16383");
  CHECK(format_slot_spans({}).empty());
  // A map built by hand may be out of order and overlap; uncovered() still
  // says no more than the truth about slots before a range.
  SlotMap odd;
  odd.ranges = {{0, 200, {"a", 1}, {}}, {100, 150, {"b", 2}, {}}};
  CHECK(odd.uncovered() == std::vector<SlotSpan>{{201, 16383}});
}

TEST_CASE("map_read_order: the old map's masters, its replicas, the seeds; "
          "the node that failed last",
          "[cluster]") {
  const ClusterSeeds seeds{{{"127.0.0.1", 31486}, {"seed", 1}}, {}};
  const auto map = parsed(three_masters());
  using Nodes = std::vector<HostPort>;
  CHECK(map_read_order(seeds, nullptr, "")
        == Nodes{{"127.0.0.1", 31486}, {"seed", 1}});
  CHECK(map_read_order(seeds, &map, "")
        == Nodes{{"127.0.0.1", 31485},
                 {"127.0.0.1", 31486},
                 {"127.0.0.1", 31487},
                 {"127.0.0.1", 31490},
                 {"127.0.0.1", 31488},
                 {"127.0.0.1", 31489},
                 {"seed", 1}});
  // The master of slot 0 did not answer: every other node comes first.
  CHECK(map_read_order(seeds, &map, "127.0.0.1:31485")
        == Nodes{{"127.0.0.1", 31486},
                 {"127.0.0.1", 31487},
                 {"127.0.0.1", 31490},
                 {"127.0.0.1", 31488},
                 {"127.0.0.1", 31489},
                 {"seed", 1},
                 {"127.0.0.1", 31485}});
  // A seed that failed comes after the other seeds, once.
  CHECK(map_read_order(seeds, nullptr, "127.0.0.1:31486")
        == Nodes{{"seed", 1}, {"127.0.0.1", 31486}});
  // A node that is in neither is not asked.
  CHECK(map_read_order(seeds, nullptr, "gone:1")
        == Nodes{{"127.0.0.1", 31486}, {"seed", 1}});
}

TEST_CASE("cluster_mode_of: INFO's cluster_enabled, else CLUSTER INFO",
          "[cluster]") {
  const auto info = [](const std::string& fields) {
    return bulk("# Cluster\r\n" + fields);
  };
  const auto cluster_info = bulk("cluster_state:ok\r\ncluster_slots_assigned:"
                                 "16384\r\n");
  const auto disabled = error("ERR This instance has cluster support disabled");
  const auto noperm =
      error("NOPERM this user has no permissions to run the 'info' command");
  CHECK(cluster_mode_of(info("cluster_enabled:1\r\n"), cluster_info) == true);
  CHECK(cluster_mode_of(info("cluster_enabled:0\r\n"), disabled) == false);
  CHECK(cluster_mode_of(bulk("cluster_enabled:1"), cluster_info) == true);
  // INFO refused (an ACL without @dangerous): CLUSTER INFO tells.
  CHECK(cluster_mode_of(noperm, cluster_info) == true);
  CHECK(cluster_mode_of(noperm, disabled) == false);
  // INFO says it, whatever CLUSTER INFO answers.
  CHECK(cluster_mode_of(info("cluster_enabled:0\r\n"), cluster_info) == false);
  CHECK(cluster_mode_of(info("cluster_enabled:1\r\n"), noperm) == true);
  // A field that only ends like it is not it.
  CHECK(cluster_mode_of(info("xcluster_enabled:1\r\n"), disabled) == false);
  // Neither tells.
  CHECK_FALSE(cluster_mode_of(noperm, noperm));
  CHECK_FALSE(
      cluster_mode_of(info(""), error("ERR unknown command 'CLUSTER'")));
  CHECK_FALSE(cluster_mode_of(nil(), nil()));
}

TEST_CASE("parse_redirect reads MOVED and ASK", "[cluster]") {
  auto redirect = parse_redirect("MOVED 3999 127.0.0.1:6381");
  REQUIRE(redirect);
  CHECK(redirect->kind == Redirect::Kind::moved);
  CHECK(redirect->slot == 3999);
  CHECK(redirect->node == HostPort{"127.0.0.1", 6381});

  redirect = parse_redirect("ASK 3999 127.0.0.1:6381");
  REQUIRE(redirect);
  CHECK(redirect->kind == Redirect::Kind::ask);
  CHECK(redirect->slot == 3999);
  CHECK(redirect->node == HostPort{"127.0.0.1", 6381});

  // As redis-server 7.0.15 printed them.
  redirect = parse_redirect("MOVED 12182 127.0.0.1:31487");
  REQUIRE(redirect);
  CHECK(redirect->node.port == 31487);
  redirect = parse_redirect("MOVED 10118 node-b.example:31486");
  REQUIRE(redirect);
  CHECK(redirect->node == HostPort{"node-b.example", 31486});
  redirect = parse_redirect("MOVED 10118 ::1:31486");
  REQUIRE(redirect);
  CHECK(redirect->node == HostPort{"::1", 31486});
  CHECK(redirect->node.address() == "[::1]:31486");
  redirect = parse_redirect("ASK 10118 ::1:31485");
  REQUIRE(redirect);
  CHECK(redirect->kind == Redirect::Kind::ask);
  CHECK(redirect->node == HostPort{"::1", 31485});

  redirect = parse_redirect("MOVED 1 ::1:7000");
  REQUIRE(redirect);
  CHECK(redirect->node == HostPort{"::1", 7000});
  redirect = parse_redirect("MOVED 0 [2001:db8::7]:65535");
  REQUIRE(redirect);
  CHECK(redirect->slot == 0);
  CHECK(redirect->node == HostPort{"2001:db8::7", 65535});
  redirect = parse_redirect("MOVED 16383 h:1");
  REQUIRE(redirect);
  CHECK(redirect->slot == 16383);
}

TEST_CASE("Redirect::target: an unknown endpoint is the node that answered",
          "[cluster]") {
  const HostPort answered{"config.example", 6379};
  // cluster-preferred-endpoint-type unknown-endpoint, and hostname with none.
  auto redirect = parse_redirect("MOVED 12182 :31487");
  REQUIRE(redirect);
  CHECK(redirect->node.host.empty());
  CHECK(redirect->target(answered) == HostPort{"config.example", 31487});
  redirect = parse_redirect("MOVED 12182 ?:31487");
  REQUIRE(redirect);
  CHECK(redirect->target(answered) == HostPort{"config.example", 31487});
  redirect = parse_redirect("ASK 1 10.0.0.3:7000");
  REQUIRE(redirect);
  CHECK(redirect->target(answered) == HostPort{"10.0.0.3", 7000});
}

TEST_CASE("parse_redirect: nothing for any other error text", "[cluster]") {
  const std::vector<std::string> other{
      "",
      "MOVED",
      "MOVED ",
      "ASK",
      "ASKING",
      "MOVED 3999",
      "MOVED 3999 ",
      "MOVED 3999 127.0.0.1",
      "MOVED 3999 127.0.0.1:",
      "MOVED 3999 127.0.0.1:x",
      "MOVED 3999 127.0.0.1:0",
      "MOVED 3999 127.0.0.1:65536",
      "MOVED 3999 127.0.0.1:-1",
      "MOVED 3999 127.0.0.1:+1",
      "MOVED 3999 127.0.0.1:6381 ",
      "MOVED 3999 127.0.0.1:6381x",
      "MOVED 3999 127.0.0.1:999999999999",
      "MOVED 3999 a b:6381",
      "MOVED 3999 a\n:6381",
      "MOVED 16384 127.0.0.1:6381",
      "MOVED -1 127.0.0.1:6381",
      "MOVED +1 127.0.0.1:6381",
      "MOVED 99999999999 127.0.0.1:6381",
      "MOVED  3999 127.0.0.1:6381",
      "MOVED x 127.0.0.1:6381",
      "MOVED :1 h:1",
      "moved 3999 127.0.0.1:6381",
      "-MOVED 3999 127.0.0.1:6381",
      " MOVED 3999 127.0.0.1:6381",
      "ERR MOVED 3999 127.0.0.1:6381",
      "TRYAGAIN Multiple keys request during rehashing of slot",
      "CLUSTERDOWN The cluster is down",
      "CROSSSLOT Keys in request don't hash to the same slot",
      "ERR This instance has cluster support disabled",
      std::string("MOVED 1\0 h:1", 12),
  };
  for (const auto& text : other) {
    INFO(text);
    CHECK_FALSE(parse_redirect(text));
  }
}

TEST_CASE("cluster_safe_tag leaves a name without braces alone", "[cluster]") {
  for (const char* name : {"a",
                           "backup",
                           "nightly:db-1",
                           "caf\xc3\xa9",
                           "(x)",
                           "\x7e",
                           "a b",
                           "%7B",
                           "[x]"}) {
    CHECK(cluster_safe_tag(name) == name);
    CHECK(name_of_cluster_tag(name) == std::string(name));
  }
  const std::string longest(rlock::lock::k_max_name_bytes, 'n');
  CHECK(cluster_safe_tag(longest) == longest);
}

TEST_CASE("cluster_safe_tag escapes braces with DEL", "[cluster]") {
  CHECK(cluster_safe_tag("}") == "\x7F)");
  CHECK(cluster_safe_tag("{") == "\x7F(");
  CHECK(cluster_safe_tag("a{b}c") == "a\x7F(b\x7F)c");
  CHECK(cluster_safe_tag("}x") == "\x7F)x");
  CHECK(cluster_safe_tag("{}") == "\x7F(\x7F)");
  // Names validate_name() refuses are still tagged one to one.
  CHECK(cluster_safe_tag("") == "\x7F");
  CHECK(cluster_safe_tag("\x7F") == "\x7F\x7F");
  CHECK(cluster_safe_tag("a\x7F(") == "a\x7F\x7F(");
  CHECK(cluster_safe_tag(std::string(3, '\0')) == std::string(3, '\0'));
}

TEST_CASE("cluster_safe_tag: different names, different tags", "[cluster]") {
  // Every name of up to 4 bytes over an alphabet with the bytes that matter.
  const std::string alphabet{'{', '}', '\x7F', '(', ')', 'a'};
  std::vector<std::string> names{""};
  for (std::size_t from = 0, length = 0; length < 4; ++length) {
    const auto to = names.size();
    for (auto i = from; i < to; ++i) {
      for (char c : alphabet) {
        names.push_back(names[i] + c);
      }
    }
    from = to;
  }
  REQUIRE(names.size() == 1 + 6 + 36 + 216 + 1296);
  std::set<std::string> tags;
  for (const auto& name : names) {
    const auto tag = cluster_safe_tag(name);
    CHECK(tag.find_first_of("{}") == std::string::npos);
    CHECK(name_of_cluster_tag(tag) == name);
    tags.insert(tag);
  }
  CHECK(tags.size() == names.size());
  // A brace-free name is never the escaped form of another.
  for (const auto& name : names) {
    if (name.find_first_of("{}") != std::string::npos) {
      CHECK(rlock::lock::validate_name(cluster_safe_tag(name))
                .error()
                .find("control characters")
            != std::string::npos);
    }
  }
}

TEST_CASE("name_of_cluster_tag: nothing for what no name gives", "[cluster]") {
  for (const auto& tag : std::vector<std::string>{"",
                                                  "{",
                                                  "a}",
                                                  "\x7F(}",
                                                  "a\x7F",
                                                  "\x7F"
                                                  "a",
                                                  "\x7F\x7F\x7F",
                                                  "\x7F{"}) {
    INFO(tag);
    CHECK_FALSE(name_of_cluster_tag(tag));
  }
  CHECK(name_of_cluster_tag("\x7F") == std::string());
}

TEST_CASE("cluster_safe_tag: every key of a lock shares one slot",
          "[cluster]") {
  for (const char* name : {"a",
                           "}",
                           "}x",
                           "{",
                           "x{",
                           "a}b",
                           "a{b}c",
                           "{}",
                           "}{",
                           "}}}",
                           "{{{",
                           "{user1000}.following",
                           "foo{}{bar}"}) {
    INFO(name);
    const auto keys = rlock::lock::keys_for("rlock:", cluster_safe_tag(name));
    const auto slot = key_slot(keys.lock);
    CHECK(slot == key_slot(cluster_safe_tag(name)));
    for (const auto& key : keys.script_keys()) {
      CHECK(key_slot(key) == slot);
    }
    CHECK(key_slot(keys.released_channel()) == slot);
    CHECK(key_slot(keys.wake_list()) == slot);
    CHECK(key_slot(keys.wake_passed()) == slot);
  }
  // Without the tag, a name that starts with '}' splits its keys.
  const auto raw = rlock::lock::keys_for("rlock:", "}x");
  CHECK(key_slot(raw.lock) != key_slot(raw.fence));
}
