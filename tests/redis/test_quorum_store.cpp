// The fan-out (redis/fanout.cpp) and the quorum store (store/quorum_store.cpp)
// against the test server. The quorum's "servers" are databases 1-3 of that
// one server: independent keyspaces, which is all the store's logic sees.
#include <rlock/lock/deployment.hpp>
#include <rlock/redis/fanout.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/store/quorum_store.hpp>
#include <rlock/util/fd.hpp>
#include <rlock/util/random.hpp>

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>

#include "server.hpp"
#include <cstdlib>
#include <thread>

using namespace rlock;
using namespace rlock::testing;
using namespace std::chrono_literals;

namespace {

// A loopback port that accepts connections (the kernel's backlog) and never
// answers, like a frozen server.
struct SilentServer {
  UniqueFd socket{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  int port = 0;

  SilentServer() {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(socket.get(),
                   reinterpret_cast<sockaddr*>(&address),
                   sizeof(address))
            == 0);
    REQUIRE(::listen(socket.get(), 8) == 0);
    socklen_t length = sizeof(address);
    ::getsockname(socket.get(), reinterpret_cast<sockaddr*>(&address), &length);
    port = ntohs(address.sin_port);
  }
};

// A loopback port that takes no connection: a listening socket whose accept
// queue is full, so that the kernel drops further requests (as a firewall
// that drops SYNs does).
struct BlackHole {
  SilentServer server;
  std::vector<UniqueFd> fill;

  BlackHole() {
    REQUIRE(::listen(server.socket.get(), 0) == 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(server.port));
    for (int i = 0; i < 3; ++i) {
      fill.emplace_back(
          ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      ::connect(fill.back().get(),
                reinterpret_cast<sockaddr*>(&address),
                sizeof(address));
    }
  }
};

// A quorum store over databases 1, 2 and 3 (quorum 2), logged in as
// `login` ("" for the default user), with a restart grace of `grace`.
lock::QuorumStore
quorum_store(const std::string& prefix,
             const std::string& login = "",
             Duration grace = Duration()) {
  lock::Quorum quorum{.members = {}, .quorum = 2};
  for (const int db : {1, 2, 3}) {
    quorum.members.push_back({.where = lock::Single{test_endpoint(login, db)}});
  }
  return lock::QuorumStore(
      lock::Deployment{.topology = std::move(quorum),
                       .prefix = prefix,
                       .restart_grace = {grace, "--restart-grace"}});
}

std::string
fresh_prefix() {
  return "quorum-test-" + random_token().substr(0, 8) + ":";
}

lock::LockRequest
request_for(const std::string& token) {
  return {"job", token, 5s, {"host", 1, "user", "cmd"}};
}

// One acquire as a waiter would see it: a server slow to answer (a
// sanitizer build, a loaded machine) means "no quorum, try again".
Seen
attempt_answered(lock::QuorumStore& store, const std::string& token) {
  Seen attempt;
  for (int tries = 0; tries < 50; ++tries) {
    attempt = seen(store.acquire(request_for(token), {}));
    if (attempt.acquired || !attempt.holder.starts_with("no quorum")) {
      break;
    }
  }
  return attempt;
}

Seen
acquire_free(lock::QuorumStore& store, const std::string& token) {
  auto attempt = attempt_answered(store, token);
  REQUIRE(attempt.acquired);
  return attempt;
}

std::string
field_on(int db, const std::string& key, const std::string& field) {
  auto c = connect_to_test_server(db);
  return c.command({"HGET", key, field}).text;
}

} // namespace

TEST_CASE("exchange_all: each connection's replies, in order, from one send") {
  auto first = connect_to_test_server(1);
  auto second = connect_to_test_server(2);
  const auto key = "fanout-" + random_token().substr(0, 8);
  std::vector<redis::Exchange> exchanges(2);
  exchanges[0].connection = &first;
  exchanges[0].commands = {{"SET", key, "one"}, {"GET", key}, {"DEL", key}};
  exchanges[1].connection = &second;
  exchanges[1].commands = {{"SET", key, "two"}, {"GET", key}, {"DEL", key}};
  redis::exchange_all(exchanges, boot_now() + 2s);
  for (const auto& exchange : exchanges) {
    CHECK_FALSE(exchange.failure);
    REQUIRE(exchange.replies.size() == 3);
  }
  CHECK(exchanges[0].replies[1].text == "one");
  CHECK(exchanges[1].replies[1].text == "two");
}

TEST_CASE("exchange_all: a server that never answers times out alone, at "
          "the deadline") {
  SilentServer silent;
  auto live = connect_to_test_server(1);
  auto endpoint = test_endpoint("", 0);
  endpoint.port = silent.port;
  auto frozen = redis::Connection::open(endpoint, {});
  std::vector<redis::Exchange> exchanges(2);
  exchanges[0].connection = &frozen;
  exchanges[0].commands = {{"PING"}};
  exchanges[1].connection = &live;
  exchanges[1].commands = {{"PING"}};
  const auto start = boot_now();
  redis::exchange_all(exchanges, start + 200ms);
  const auto took = boot_now() - start;
  REQUIRE(exchanges[0].failure);
  CHECK(exchanges[0].failure->failure_kind() == redis::FailureKind::timed_out);
  CHECK_FALSE(exchanges[1].failure);
  REQUIRE(exchanges[1].replies.size() == 1);
  CHECK(exchanges[1].replies[0].text == "PONG");
  CHECK(took >= 200ms);
  CHECK(took < 2s);
}

TEST_CASE("dial_all: connects to every server at once; a black hole fails "
          "alone, at the deadline, or once enough others connected") {
  BlackHole hole;
  auto black = test_endpoint("", 0);
  black.port = hole.server.port;
  std::vector<redis::Dial> dials(3);
  dials[0].endpoint = test_endpoint("", 1);
  dials[1].endpoint = black;
  dials[2].endpoint = test_endpoint("", 2);
  auto start = boot_now();
  redis::dial_all(dials, {}, start + 300ms);
  auto took = boot_now() - start;
  REQUIRE(dials[0].connection);
  REQUIRE(dials[2].connection);
  CHECK(dials[0].connection->command({"PING"}).text == "PONG");
  CHECK(dials[2].connection->command({"PING"}).text == "PONG");
  REQUIRE_FALSE(dials[1].connection);
  REQUIRE(dials[1].failure);
  CHECK(std::string(dials[1].failure->what()).find("no answer within")
        != std::string::npos);
  CHECK(took >= 300ms);
  CHECK(took < 2s);

  // Enough: two connected, the black hole is waited for 50 ms more, not
  // until the deadline.
  for (auto& dial : dials) {
    dial.connection.reset();
    dial.failure.reset();
  }
  start = boot_now();
  redis::dial_all(dials, {}, start + 10s, redis::Enough{2, start + 50ms});
  took = boot_now() - start;
  CHECK(dials[0].connection);
  CHECK(dials[2].connection);
  CHECK(dials[1].failure);
  CHECK(took < 5s);
}

TEST_CASE("a quorum store takes the lock on every server, hands out the "
          "highest fence, written back to each, and releases everywhere") {
  const auto prefix = fresh_prefix();
  auto store = quorum_store(prefix);
  const auto key = store.key_of("job");
  // Server 3's counter is far ahead of the others'.
  connect_to_test_server(3).command(
      {"SET", key + ":fence", "4999999999999999", "PX", "60000"});
  const auto attempt = acquire_free(store, "tok-a");
  REQUIRE(attempt.acquired);
  CHECK(attempt.granted == 3);
  CHECK(attempt.servers == 3);
  CHECK(attempt.fence == 5000000000000000);
  CHECK(attempt.clock_allowance == 50ms + 2ms); // 1% of the TTL, plus 2ms
  for (const int db : {1, 2, 3}) {
    CHECK(field_on(db, key, "token") == "tok-a");
    CHECK(field_on(db, key, "fence") == "5000000000000000");
    CHECK(connect_to_test_server(db).command({"GET", key + ":fence"}).text
          == "5000000000000000");
  }
  const auto renewal = store.renew("job", "tok-a", 5s, lock::RenewMode::exact);
  CHECK(renewal.held);
  CHECK(renewal.confirmed == 3);
  CHECK(store.check("job", "tok-a").has_value());
  CHECK(store.release("job", "tok-a"));
  for (const int db : {1, 2, 3}) {
    CHECK(connect_to_test_server(db).command({"EXISTS", key}).integer == 0);
  }
}

TEST_CASE("a quorum store: held by another token on 2 of 3 servers is busy, "
          "and the one server that granted it is undone") {
  const auto prefix = fresh_prefix();
  auto store = quorum_store(prefix);
  const auto key = store.key_of("job");
  for (const int db : {1, 2}) {
    connect_to_test_server(db).command(
        {"HSET",    key,           "token",  "other",    "host",
         "far",     "pid",         "7",      "user",     "ann",
         "command", "x",           "ttl_ms", "5000",     "fence",
         "1",       "acquired_ms", "0",      "renewals", "0"});
    connect_to_test_server(db).command({"PEXPIRE", key, "5000"});
  }
  // Waiters are not woken by the undo: the lock was never ours.
  auto released = redis::Subscription::open(
      test_endpoint("", 0),
      {},
      {lock::keys_for(prefix, "job").released_channel()});
  const auto attempt = attempt_answered(store, "tok-b");
  connect_to_test_server(0).command(
      {"PING"}); // a round trip after the undo's publish
  std::this_thread::sleep_for(50ms);
  CHECK(released.take_messages() == 0);
  CHECK_FALSE(attempt.acquired);
  CHECK(attempt.holder == "ann@far:7");
  CHECK(attempt.retry_ms > 0);
  CHECK(attempt.retry_ms <= 5000);
  CHECK(connect_to_test_server(3).command({"EXISTS", key}).integer == 0);
  CHECK(store.lease_remaining_ms("job") > 0);
  CHECK_FALSE(store.check("job", "tok-b"));
}

TEST_CASE("a quorum store's renewal counts a quorum of servers: one lost "
          "copy keeps the lock, two lose it") {
  const auto prefix = fresh_prefix();
  auto store = quorum_store(prefix);
  const auto key = store.key_of("job");
  REQUIRE(acquire_free(store, "tok-c").acquired);
  connect_to_test_server(1).command({"DEL", key});
  auto renewal = store.renew("job", "tok-c", 5s, lock::RenewMode::exact);
  CHECK(renewal.held);
  CHECK(renewal.confirmed == 2);
  // Never re-created where it was lost.
  CHECK(connect_to_test_server(1).command({"EXISTS", key}).integer == 0);
  connect_to_test_server(2).command({"DEL", key});
  renewal = store.renew("job", "tok-c", 5s, lock::RenewMode::exact);
  CHECK_FALSE(renewal.held);
  store.release("job", "tok-c");
}

TEST_CASE("a quorum store's fence increases across holders whose quorums "
          "differ, even after the server with the highest counter is lost") {
  const auto prefix = fresh_prefix();
  auto store = quorum_store(prefix);
  const auto key = store.key_of("job");
  // Server 3 hands out fences far above the others' (its clock runs ahead):
  // the first holder's fence comes from it.
  connect_to_test_server(3).command(
      {"SET", key + ":fence", "4999999999999999", "PX", "60000"});
  std::int64_t last = 0;
  for (const int lost : {0, 3, 1, 2, 3}) {
    // One server has lost everything, its fence counter too: the holder's
    // quorum is the other two, which the write-back raised.
    if (lost > 0) {
      connect_to_test_server(lost).command({"DEL", key, key + ":fence"});
    }
    const auto token = "tok-" + std::to_string(lost);
    const auto attempt = acquire_free(store, token);
    REQUIRE(attempt.acquired);
    CHECK(attempt.fence > last);
    CHECK(attempt.fence >= 5000000000000000);
    last = attempt.fence;
    REQUIRE(store.release("job", token));
  }
}

TEST_CASE("a quorum store with a restart grace: servers that refuse INFO "
          "never count, and too few that can tell their start is the error "
          "one server gives; without a grace they count") {
  auto admin = connect_to_test_server();
  const std::string user = "noinfo" + random_token().substr(0, 6);
  admin.command(
      {"ACL", "SETUSER", user, "on", "nopass", "~*", "&*", "+@all", "-info"});
  const auto prefix = fresh_prefix();
  auto store = quorum_store(prefix, user + ":x", 1h);
  const auto key = store.key_of("job");
  try {
    store.acquire(request_for("tok-g"), {});
    FAIL("no error");
  } catch (const redis::Failure& e) {
    CHECK(e.failure_kind() == redis::FailureKind::unexpected_reply);
    CHECK_THAT(e.what(),
               Catch::Contains("INFO refused: NOPERM")
                   && Catch::Contains("allow INFO or set --restart-grace 0"));
  }
  for (const int db : {1, 2, 3}) {
    CHECK(connect_to_test_server(db).command({"EXISTS", key}).integer == 0);
  }
  // No grace: INFO is not needed, and the lock is taken.
  auto without = quorum_store(prefix, user + ":x");
  CHECK(acquire_free(without, "tok-h").acquired);
  CHECK(without.release("job", "tok-h"));
  admin.command({"ACL", "DELUSER", user});
}
