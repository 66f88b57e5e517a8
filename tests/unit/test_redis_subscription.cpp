#include <rlock/redis/failure.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/util/error.hpp>

#include <catch2/catch.hpp>

#include "replies.hpp"

using namespace rlock;
using redis::Reply;
using test_replies::bulk;

namespace {

Reply
push(std::string kind) {
  Reply reply;
  reply.type = Reply::Type::array;
  reply.elements = {bulk(std::move(kind)), bulk("rlock:{x}:released")};
  return reply;
}

} // namespace

TEST_CASE("check_subscribed takes a SUBSCRIBE confirmation only") {
  CHECK_NOTHROW(redis::check_subscribed(push("subscribe"), "127.0.0.1:7000"));
  CHECK_THROWS_WITH(redis::check_subscribed(push("message"), "127.0.0.1:7000"),
                    "unexpected reply to SUBSCRIBE from 127.0.0.1:7000");
  CHECK_THROWS_WITH(redis::check_subscribed(bulk("subscribe"), "a:1"),
                    "unexpected reply to SUBSCRIBE from a:1");
  Reply refused;
  refused.type = Reply::Type::error;
  refused.text = "NOPERM no channel for you";
  CHECK_THROWS_AS(redis::check_subscribed(refused, "a:1"), Error);
  CHECK_THROWS_WITH(redis::check_subscribed(refused, "a:1"),
                    "cannot subscribe on a:1: NOPERM no channel for you");
}

TEST_CASE("check_subscribed with ssubscribe: an SSUBSCRIBE confirmation") {
  CHECK_NOTHROW(
      redis::check_subscribed(push("ssubscribe"), "a:1", "ssubscribe"));
  CHECK_THROWS_WITH(
      redis::check_subscribed(push("subscribe"), "a:1", "ssubscribe"),
      "unexpected reply to SSUBSCRIBE from a:1");
  Reply moved;
  moved.type = Reply::Type::error;
  moved.text = "MOVED 3999 127.0.0.1:7001";
  try {
    redis::check_subscribed(moved, "a:1", "ssubscribe");
    FAIL("no throw");
  } catch (const redis::Failure& failure) {
    CHECK(failure.server_code() == "MOVED");
  }
}

TEST_CASE("is_message: a message pushed on a channel") {
  CHECK(redis::is_message(push("message")));
  CHECK(redis::is_message(push("smessage")));
  CHECK_FALSE(redis::is_message(push("ssubscribe")));
  CHECK_FALSE(redis::is_message(push("subscribe")));
  CHECK_FALSE(redis::is_message(bulk("message")));
  auto status = push("message");
  status.elements[0].type = Reply::Type::status;
  CHECK_FALSE(redis::is_message(status));
  CHECK_FALSE(redis::is_message(Reply{}));
}

TEST_CASE("popped_by: a wake-up popped, none, or why the wait ended") {
  Reply popped;
  popped.type = Reply::Type::array;
  popped.elements = {bulk("rlock:{x}:wake"), bulk("free")};
  CHECK(redis::popped_by(popped, "a:1") == 1);
  Reply timed_out;
  timed_out.type = Reply::Type::nil;
  CHECK(redis::popped_by(timed_out, "a:1") == 0);
  const auto failure_of = [](std::string error) {
    Reply reply;
    reply.type = Reply::Type::error;
    reply.text = std::move(error);
    try {
      redis::popped_by(reply, "a:1");
    } catch (const redis::Failure& failure) {
      return failure;
    }
    FAIL("no failure");
    return redis::Failure(redis::FailureKind::closed, "");
  };
  // The server hands the wait to another: watched again (may pass).
  for (const auto* error : {"MOVED 3999 127.0.0.1:7001",
                            "ASK 3999 127.0.0.1:7001",
                            "UNBLOCKED force unblock from blocking operation",
                            "READONLY You can't write against a replica."}) {
    const auto failure = failure_of(error);
    INFO(error);
    CHECK(failure.failure_kind() == redis::FailureKind::closed);
    CHECK(redis::may_pass(failure));
    CHECK(std::string(failure.what())
          == std::string("the wait on a:1 was ended: ") + error);
  }
  // Any other refusal lasts: the wait ends with it.
  const auto refused = failure_of("NOPERM this user has no permissions");
  CHECK_FALSE(redis::may_pass(refused));
  CHECK(std::string(refused.what())
        == "cannot wait on a:1: NOPERM this user has no permissions");
}
