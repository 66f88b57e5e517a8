// What a waiter or renewer may retry, and which exit code each kind of
// failure gets: one function each.
#include <rlock/cli/exit_codes.hpp>
#include <rlock/redis/failure.hpp>

#include <catch2/catch.hpp>

using namespace rlock;
using redis::failover_under_way;
using redis::Failure;
using redis::FailureKind;

namespace {

Failure
error_reply(const std::string& text) {
  try {
    redis::throw_server_error("cannot acquire lock 'x'", text);
  } catch (const Failure& failure) {
    return failure;
  }
  FAIL("throw_server_error returned");
  throw;
}

} // namespace

TEST_CASE("connection failures may pass; refusals and odd replies do not") {
  CHECK(may_pass(Failure(FailureKind::refused, "m")));
  CHECK(may_pass(Failure(FailureKind::timed_out, "m")));
  CHECK(may_pass(Failure(FailureKind::closed, "m")));
  CHECK(may_pass(Failure(FailureKind::not_redis, "m")));
  // A failover under way: Sentinel still names the old master, or the
  // replicas have not caught up.
  CHECK(may_pass(Failure(FailureKind::not_master, "m")));
  CHECK(may_pass(Failure(FailureKind::unconfirmed, "m")));
  CHECK_FALSE(may_pass(Failure(FailureKind::auth_refused, "m")));
  CHECK_FALSE(may_pass(Failure(FailureKind::tls_failed, "m")));
  CHECK_FALSE(may_pass(Failure(FailureKind::unexpected_reply, "m")));
  CHECK_FALSE(may_pass(Failure(FailureKind::bad_address, "m")));
}

TEST_CASE("error replies are known by their code") {
  for (const char* code : {"READONLY",
                           "MOVED",
                           "ASK",
                           "TRYAGAIN",
                           "CLUSTERDOWN",
                           "LOADING",
                           "BUSY",
                           "MASTERDOWN",
                           "NOSCRIPT",
                           "OOM",
                           "WRONGTYPE",
                           "NOAUTH",
                           "WRONGPASS",
                           "ERR"}) {
    const auto failure = error_reply(std::string(code) + " some text");
    CHECK(failure.failure_kind() == FailureKind::server_error);
    CHECK(failure.server_code() == code);
    CHECK(std::string(failure.what())
          == "cannot acquire lock 'x': " + std::string(code) + " some text");
  }
}

TEST_CASE("a server that cannot serve yet may pass; other errors do not") {
  for (const char* text : {"LOADING Redis is loading the dataset in memory",
                           "BUSY Redis is busy running a script",
                           "MASTERDOWN Link with MASTER is down",
                           "TRYAGAIN Multiple keys request during rehashing",
                           "CLUSTERDOWN The cluster is down",
                           "READONLY You can't write against a read only "
                           "replica.",
                           "ERR max number of clients reached"}) {
    CHECK(may_pass(error_reply(text)));
  }
  for (const char* text : {"ERR unknown command",
                           "NOSCRIPT No matching script",
                           "OOM command not allowed",
                           "WRONGTYPE Operation against a key",
                           "MOVED 3999 127.0.0.1:6381",
                           "NOPERM this user has no permissions",
                           "BUSYKEY Target key name already exists."}) {
    CHECK_FALSE(may_pass(error_reply(text)));
  }
}

TEST_CASE("a failover under way is told from a server that is not there") {
  CHECK(failover_under_way(Failure(FailureKind::not_master, "m")));
  CHECK(failover_under_way(Failure(FailureKind::unconfirmed, "m")));
  CHECK(failover_under_way(error_reply("TRYAGAIN Multiple keys")));
  CHECK(failover_under_way(error_reply("CLUSTERDOWN The cluster is down")));
  // A plain URL that points at a replica, or a restart: said at once.
  CHECK_FALSE(failover_under_way(error_reply("READONLY You can't write")));
  CHECK_FALSE(failover_under_way(error_reply("LOADING Redis is loading")));
  CHECK_FALSE(failover_under_way(Failure(FailureKind::refused, "m")));
  CHECK_FALSE(failover_under_way(Failure(FailureKind::timed_out, "m")));
  CHECK_FALSE(failover_under_way(error_reply("BUSY running a script")));
  CHECK_FALSE(failover_under_way(error_reply("ERR unknown command")));
}

TEST_CASE("cli/ maps each kind of failure to its exit code") {
  CHECK(exit_code::for_error(ErrorKind::bad_input) == 64);
  CHECK(exit_code::for_error(ErrorKind::unavailable) == 69);
  CHECK(exit_code::for_error(ErrorKind::system) == 71);
  CHECK(exit_code::for_error(ErrorKind::output) == 74);
  CHECK(exit_code::for_error(ErrorKind::not_found) == 127);
  CHECK(exit_code::for_error(ErrorKind::not_executable) == 126);
  CHECK(exit_code::for_error(Failure(FailureKind::closed, "m").kind()) == 69);
}
