#include <rlock/redis/url.hpp>

#include <catch2/catch.hpp>

using rlock::redis::parse_url;
using rlock::redis::redact_url;

TEST_CASE("parse_url reads TCP URLs", "[url]") {
  auto endpoint = parse_url("redis://127.0.0.1:6390/2");
  REQUIRE(endpoint);
  CHECK(endpoint.value().host == "127.0.0.1");
  CHECK(endpoint.value().port == 6390);
  CHECK(endpoint.value().db == 2);
  CHECK(endpoint.value().password.empty());

  endpoint = parse_url("redis://localhost");
  REQUIRE(endpoint);
  CHECK(endpoint.value().port == 6379);
  CHECK(endpoint.value().db == 0);
  CHECK(endpoint.value().address() == "localhost:6379");
  CHECK_FALSE(endpoint.value().tls);

  endpoint = parse_url("rediss://ci:pw@redis.example:6380/1");
  REQUIRE(endpoint);
  CHECK(endpoint.value().tls);
  CHECK(endpoint.value().host == "redis.example");
  CHECK(endpoint.value().port == 6380);
  CHECK(endpoint.value().db == 1);
  CHECK(endpoint.value().user == "ci");
}

TEST_CASE("schemes are case-insensitive, hosts and passwords are not",
          "[url]") {
  const auto endpoint = parse_url("REDISS://Ci:PW@Redis.Example:6380");
  REQUIRE(endpoint);
  CHECK(endpoint.value().tls);
  CHECK(endpoint.value().host == "Redis.Example");
  CHECK(endpoint.value().password == "PW");
  const auto cluster =
      rlock::redis::parse_deployment_url("Redis+Cluster://a:7000,b:7001");
  REQUIRE(cluster);
  CHECK(cluster.value().kind == rlock::redis::TopologyKind::cluster);
  CHECK(cluster.value().nodes.size() == 2);
  CHECK_FALSE(parse_url("REDIS:/host"));
  // Redacting reads the scheme alike: only the password changes (a fuzz
  // finding: the query of "redIs://...@?d" was hidden as for other schemes).
  const std::string url = "redIs://:s\xdc"
                          "cret@?d";
  const auto redacted = parse_url(redact_url(url));
  REQUIRE(redacted);
  CHECK(redacted.value().host == parse_url(url).value().host);
  CHECK(redacted.value().password == "***");
  CHECK(redact_url("REDISS://u:pw@h:1/2") == "rediss://u:***@h:1/2");
}

TEST_CASE("parse_url reads users, passwords and percent-encoding", "[url]") {
  auto endpoint = parse_url("redis://ci:s%40cret%3A1@redis.example:6380/0");
  REQUIRE(endpoint);
  CHECK(endpoint.value().user == "ci");
  CHECK(endpoint.value().password == "s@cret:1");
  CHECK(endpoint.value().host == "redis.example");

  endpoint = parse_url("redis://:only-password@h");
  REQUIRE(endpoint);
  CHECK(endpoint.value().user.empty());
  CHECK(endpoint.value().password == "only-password");

  endpoint = parse_url("redis://secret@h");
  REQUIRE(endpoint);
  CHECK(endpoint.value().user.empty());
  CHECK(endpoint.value().password == "secret");
}

TEST_CASE("parse_url reads IPv6 literals and unix sockets", "[url]") {
  auto endpoint = parse_url("redis://[::1]:6380");
  REQUIRE(endpoint);
  CHECK(endpoint.value().host == "::1");
  CHECK(endpoint.value().port == 6380);
  CHECK(endpoint.value().address() == "[::1]:6380");

  endpoint = parse_url("unix:///run/redis/redis.sock?db=3");
  REQUIRE(endpoint);
  CHECK(endpoint.value().is_unix());
  CHECK(endpoint.value().socket_path == "/run/redis/redis.sock");
  CHECK(endpoint.value().db == 3);
}

// RFC 6874: the '%' before a zone id is written %25 in a URI;
// getaddrinfo takes "fe80::1%eth0".
TEST_CASE("parse_url reads an IPv6 zone id, percent-decoded", "[url]") {
  const std::vector<std::pair<std::string, std::string>> good{
      {"redis://[fe80::1%25eth0]:6379", "fe80::1%eth0"},
      {"redis://[fe80::1%25eth0]", "fe80::1%eth0"},
      {"redis://[fe80::1%251]:7000/2", "fe80::1%1"},
      {"redis://[fe80::1%25en%2D1]", "fe80::1%en-1"},
      {"redis://u:p%25w@[fe80::a:b%25wlp3s0.7]:1", "fe80::a:b%wlp3s0.7"},
      // Without %25, as curl also reads it.
      {"redis://[fe80::1%eth0]:6379", "fe80::1%eth0"},
  };
  for (const auto& [url, host] : good) {
    INFO(url);
    const auto endpoint = parse_url(url);
    REQUIRE(endpoint);
    CHECK(endpoint.value().host == host);
  }
  const auto endpoint = parse_url("redis://[fe80::1%25eth0]:6380");
  REQUIRE(endpoint);
  CHECK(endpoint.value().port == 6380);
  CHECK(endpoint.value().address() == "[fe80::1%eth0]:6380");
  CHECK(parse_url("redis://u:p%25w@[fe80::a:b%25wlp3s0.7]:1").value().password
        == "p%w");
}

TEST_CASE("parse_url rejects a bad IPv6 zone id with the reason", "[url]") {
  for (const std::string url : {"redis://[fe80::1%25]:6379",
                                "redis://[fe80::1%]:6379",
                                "redis://[fe80::1%25%zz]",
                                "redis://[fe80::1%25eth%200]",
                                "redis://[fe80::1%25a%2Fb]"}) {
    INFO(url);
    const auto result = parse_url(url);
    CHECK_FALSE(result);
    CHECK_THAT(result.error(), Catch::Contains("zone id"));
  }
}

TEST_CASE("parse_url rejects malformed URLs with the reason", "[url]") {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"http://x", "scheme"},
      {"redis://", "missing host"},
      {"redis://host:99999", "port"},
      {"redis://host:0", "port"},
      {"redis://host:", "empty port"},
      {"redis://host:abc", "port"},
      {"redis://h/abc", "database"},
      {"redis://h/-1", "database"},
      {"redis://[::1", "unclosed"},
      {"redis://u:%zz@h", "percent"},
      {"unix://relative.sock", "absolute"},
      {"unix:///x.sock?foo=1", "db=N"},
      {"rediss://", "missing host"},
      {"", "scheme"},
  };
  for (const auto& [url, reason] : bad) {
    INFO(url);
    const auto result = parse_url(url);
    CHECK_FALSE(result);
    CHECK_THAT(result.error(), Catch::Contains(reason));
  }
}

TEST_CASE("a password never appears in a URL error", "[url]") {
  const auto result = parse_url("redis://user:hunter2@h:99999");
  REQUIRE_FALSE(result);
  CHECK_THAT(result.error(), !Catch::Contains("hunter2"));
  CHECK(redact_url("redis://user:hunter2@h") == "redis://user:***@h");
  CHECK(redact_url("redis://hunter2@h/1") == "redis://***@h/1");
  CHECK(redact_url("redis://h:1/2") == "redis://h:1/2");
}

using rlock::redis::DeploymentUrl;
using rlock::redis::HostPort;
using rlock::redis::join_addresses;
using rlock::redis::parse_deployment_url;
using rlock::redis::TopologyKind;

namespace {

DeploymentUrl
deployment(const std::string& url) {
  INFO(url);
  const auto result = parse_deployment_url(url);
  INFO(result.error());
  REQUIRE(result);
  return result.value();
}

std::vector<HostPort>
nodes(std::initializer_list<HostPort> list) {
  return list;
}

} // namespace

TEST_CASE("parse_deployment_url reads a plain URL as one server", "[url]") {
  for (const std::string url : {"redis://127.0.0.1:6390/2",
                                "redis://localhost",
                                "rediss://ci:s%40cret@redis.example:6380/1",
                                "redis://secret@h",
                                "redis://[::1]:6380",
                                "unix:///run/redis/redis.sock?db=3"}) {
    INFO(url);
    const auto single = deployment(url);
    const auto endpoint = parse_url(url).value();
    CHECK(single.kind == TopologyKind::single);
    CHECK(single.endpoint.address() == endpoint.address());
    CHECK(single.endpoint.db == endpoint.db);
    CHECK(single.endpoint.user == endpoint.user);
    CHECK(single.endpoint.password == endpoint.password);
    CHECK(single.endpoint.tls == endpoint.tls);
    CHECK(single.db == endpoint.db);
    CHECK(single.user == endpoint.user);
    CHECK(single.password == endpoint.password);
    CHECK(single.tls == endpoint.tls);
    CHECK(single.nodes.empty());
    CHECK(single.address() == endpoint.address());
  }
  CHECK(deployment("rediss://ci:s%40cret@redis.example:6380/1").password
        == "s@cret");
}

TEST_CASE("parse_deployment_url reads sentinel URLs", "[url]") {
  auto url = deployment("redis+sentinel://s1/mymaster");
  CHECK(url.kind == TopologyKind::sentinel);
  CHECK(url.nodes == nodes({{"s1", 26379}}));
  CHECK(url.master_name == "mymaster");
  CHECK(url.db == 0);
  CHECK(url.user.empty());
  CHECK(url.password.empty());
  CHECK_FALSE(url.tls);

  url = deployment("redis+sentinel://s1:26380,s2,10.0.0.3:5000/mymaster/3");
  CHECK(url.nodes == nodes({{"s1", 26380}, {"s2", 26379}, {"10.0.0.3", 5000}}));
  CHECK(url.master_name == "mymaster");
  CHECK(url.db == 3);

  url = deployment("rediss+sentinel://ci:s%40cret%3A1@[::1]:26380,[fe80::2],"
                   "s3/my%20master/");
  CHECK(url.kind == TopologyKind::sentinel);
  CHECK(url.tls);
  CHECK(url.nodes
        == nodes({{"::1", 26380}, {"fe80::2", 26379}, {"s3", 26379}}));
  CHECK(url.master_name == "my master");
  CHECK(url.db == 0);
  CHECK(url.user == "ci");
  CHECK(url.password == "s@cret:1");

  url = deployment("redis+sentinel://secret@s1/m");
  CHECK(url.user.empty());
  CHECK(url.password == "secret");

  url = deployment("redis+sentinel://:secret@s1/m.x-1_y%40z");
  CHECK(url.password == "secret");
  CHECK(url.master_name == "m.x-1_y@z");
}

TEST_CASE("parse_deployment_url reads cluster URLs", "[url]") {
  auto url = deployment("redis+cluster://n1:7000,n2:7001,n3");
  CHECK(url.kind == TopologyKind::cluster);
  CHECK(url.nodes == nodes({{"n1", 7000}, {"n2", 7001}, {"n3", 6379}}));
  CHECK(url.db == 0);
  CHECK(url.master_name.empty());
  CHECK_FALSE(url.tls);

  url = deployment("rediss+cluster://ci:pw@[::1]:7000,n2:7001/0");
  CHECK(url.kind == TopologyKind::cluster);
  CHECK(url.tls);
  CHECK(url.nodes == nodes({{"::1", 7000}, {"n2", 7001}}));
  CHECK(url.user == "ci");
  CHECK(url.password == "pw");

  CHECK(deployment("redis+cluster://n1/").nodes == nodes({{"n1", 6379}}));

  url = deployment("redis+cluster://[fe80::1%25eth0]:7000,[fe80::2%251]");
  CHECK(url.nodes == nodes({{"fe80::1%eth0", 7000}, {"fe80::2%1", 6379}}));
}

TEST_CASE("parse_deployment_url rejects malformed URLs with the reason",
          "[url]") {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"redis+sentinel://s1", "missing master name"},
      {"redis+sentinel://s1/", "missing master name"},
      {"redis+sentinel://s1//2", "missing master name"},
      {"redis+sentinel://s1,,s2/m", "empty host in the list (host 2)"},
      {"redis+sentinel://s1,/m", "empty host in the list"},
      {"redis+cluster://,n1", "empty host in the list"},
      {"redis+sentinel:///m", "no sentinel listed"},
      {"redis+sentinel://u:p@/m", "no sentinel listed"},
      {"redis+cluster://", "no seed node listed"},
      {"rediss+cluster:///0", "no seed node listed"},
      {"redis+sentinel://:26379/m", "missing host"},
      {"redis+sentinel://s1:0/m", "port must be"},
      {"redis+sentinel://s1,s2:65536/m",
       "port must be a number from 1 to 65535 (host 2)"},
      {"redis+cluster://n1:x", "port must be"},
      {"redis+cluster://n1:", "empty port"},
      {"redis+cluster://[::1", "unclosed"},
      {"redis+sentinel://[::1]x/m", "after ']'"},
      {"redis+sentinel://s1, s2/m", "spaces"},
      {"redis+cluster://n1:7000/1", "Redis Cluster has only database 0"},
      {"rediss+cluster://n1/15", "Redis Cluster has only database 0"},
      {"redis+cluster://n1/x", "database must be"},
      {"redis+sentinel://s1/m/x", "database must be"},
      {"redis+sentinel://s1/m/-1", "database must be"},
      {"redis+sentinel://s1/a/b/0", "/MASTER/DB"},
      {"redis+sentinel://s1/a%2Fb", "must not contain '/'"},
      {"redis+sentinel://s1/a%0Ab", "control characters"},
      {"redis+sentinel://s1/a%7Fb", "control characters"},
      {"redis+sentinel://s1/a%zz", "percent-encoding in the master name"},
      {"redis+sentinel://u:%zz@s1/m", "percent-encoding in the user"},
      {"redis+sentinel://u:a/b@s1/m", "write a '/' in the password as %2F"},
      {"redis+sentinel://s1/a@b", "an '@' in the master name as %40"},
      {"redis+sentinel://s1,S1/m", "hosts 1 and 2 are the same"},
      {"redis+sentinel://s1,s2,s1:26379/m", "hosts 1 and 3 are the same"},
      {"redis+cluster://[::1]:6379,[::1]", "hosts 1 and 2 are the same"},
      {"redis+sentinel://s1/m?sentinel_password=x", "no query"},
      {"redis+sentinel://s1:26379/0?sentinelMasterId=m", "no query"},
      {"redis+sentinel://s1:26379#m", "fragment"},
      {"redis-sentinel://s1/0?sentinelMasterId=m", "redis+sentinel://"},
      {"rediss-sentinel://s1/0#m", "redis+sentinel://"},
      {"redis://n1,n2", "a list of hosts needs"},
      {"redis://h?password=x", "no query"},
      {"rediss://u:p@h:6379#x", "fragment"},
      {"rediss://u:p@n1:7000,n2:7001/0", "a list of hosts needs"},
      {"sentinel://s1:26379", "scheme must be"},
      {"", "scheme must be"},
      {"redis://host:0", "port"},
      {"redis://", "missing host"},
      {"unix://relative.sock", "absolute"},
  };
  for (const auto& [url, reason] : bad) {
    INFO(url);
    const auto result = parse_deployment_url(url);
    CHECK_FALSE(result);
    CHECK_THAT(result.error(), Catch::StartsWith("invalid URL '"));
    CHECK_THAT(result.error(), Catch::Contains(reason));
  }
}

TEST_CASE("parse_deployment_url accepts a comma in a password", "[url]") {
  CHECK(deployment("redis://u:a,b@h").password == "a,b");
  CHECK(deployment("redis+sentinel://u:a,b@s1,s2/m").password == "a,b");
}

TEST_CASE("a password never appears in a deployment URL error", "[url]") {
  for (const std::string url :
       {"redis+sentinel://u:hunter2@s1:x/m",
        "rediss+cluster://hunter2@n1/3",
        "redis+cluster://:hunter2@",
        "redis+sentinel://u:hunter2@s1/m?sentinel_password=hunter2",
        "redis+sentinel://s1/m?password=hunter2&db=1",
        "redis+sentinel://u:hunt/er2@s1/m/x",
        "redis://:hunt/er2@h",
        "redis://h:1?password=hunter2",
        "redis://h?password=hunter2"}) {
    INFO(url);
    const auto result = parse_deployment_url(url);
    REQUIRE_FALSE(result);
    CHECK_THAT(result.error(), !Catch::Contains("hunter2"));
    CHECK_THAT(result.error(), !Catch::Contains("er2"));
    CHECK_THAT(result.error(), Catch::Contains("***"));
  }
}

TEST_CASE("redact_url hides passwords in every form", "[url]") {
  CHECK(redact_url("redis+sentinel://u:pw@s1:1,[::1]:2/m/1")
        == "redis+sentinel://u:***@s1:1,[::1]:2/m/1");
  CHECK(redact_url("rediss+cluster://pw@n1,n2/0")
        == "rediss+cluster://***@n1,n2/0");
  CHECK(redact_url("redis+sentinel://s1,s2/m") == "redis+sentinel://s1,s2/m");
  // Query values but db= are hidden: other clients put passwords there.
  CHECK(redact_url("redis+sentinel://s1/m?sentinel_password=pw&db=2&x")
        == "redis+sentinel://s1/m?sentinel_password=***&db=2&***");
  CHECK(redact_url("redis://u:pw@h/0?password=pw")
        == "redis://u:***@h/0?password=***");
  // parse_url reads a '?' before the path as part of the host name, so the
  // URL must stay as it is to parse the same; parse_deployment_url refuses
  // it and hides it in its reason.
  CHECK(parse_url("redis://h?x=1").value().host == "h?x=1");
  CHECK(redact_url("redis://h?x=1") == "redis://h?x=1");
  CHECK(redact_url("unix:///run/r.sock?db=3") == "unix:///run/r.sock?db=3");
  // A raw '/' or '?' in a password (base64 has '/') is still hidden.
  CHECK(redact_url("redis://:ab/c?d@h/1") == "redis://:***@h/1");
  CHECK(redact_url("redis+sentinel://u:a/b@s1/m")
        == "redis+sentinel://u:***@s1/m");
  // A unix socket path may hold an '@'; it is not a password.
  CHECK(redact_url("unix:///run/redis@x.sock") == "unix:///run/redis@x.sock");
}

TEST_CASE("a redacted deployment URL parses to the same deployment", "[url]") {
  for (const std::string url : {"redis+sentinel://u:pw@s1:1,[::1]:2/m/1",
                                "rediss+sentinel://pw@s1/my%20master",
                                "redis+sentinel://u:p%2Fw@s1/a%40b",
                                "redis+cluster://:pw@n1:7000,n2/0",
                                "rediss+cluster://u:p%2Fw@n1",
                                "redis://u:pw@h:1/2"}) {
    INFO(url);
    const auto original = deployment(url);
    const auto redacted = deployment(redact_url(url));
    CHECK(redacted.kind == original.kind);
    CHECK(redacted.nodes == original.nodes);
    CHECK(redacted.master_name == original.master_name);
    CHECK(redacted.db == original.db);
    CHECK(redacted.user == original.user);
    CHECK(redacted.tls == original.tls);
    CHECK(redacted.password == "***");
  }
}

TEST_CASE("DeploymentUrl names its nodes for messages and connections",
          "[url]") {
  CHECK(join_addresses({}).empty());
  CHECK(join_addresses({{"s1", 26379}, {"::1", 26380}})
        == "s1:26379,[::1]:26380");

  const auto sentinel =
      deployment("rediss+sentinel://ci:pw@s1,[::1]:26380/mymaster/2");
  CHECK(sentinel.address()
        == "master 'mymaster' via sentinels s1:26379,[::1]:26380");
  const auto data = sentinel.data_node({"10.0.0.9", 6390});
  CHECK(data.address() == "10.0.0.9:6390");
  CHECK(data.db == 2);
  CHECK(data.user == "ci");
  CHECK(data.password == "pw");
  CHECK(data.tls);
  const auto asked = sentinel.sentinel(sentinel.nodes.at(1));
  CHECK(asked.address() == "[::1]:26380");
  CHECK(asked.tls);
  CHECK(asked.db == 0);
  CHECK(asked.user.empty());
  CHECK(asked.password.empty());

  const auto cluster = deployment("redis+cluster://:pw@n1:7000,n2:7001");
  CHECK(cluster.address() == "Redis Cluster via n1:7000,n2:7001");
  CHECK(cluster.data_node(cluster.nodes.at(0)).password == "pw");
  CHECK_FALSE(cluster.data_node(cluster.nodes.at(0)).tls);
}
