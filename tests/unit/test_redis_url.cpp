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
