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

TEST_CASE("is_message: a message pushed on a channel") {
  CHECK(redis::is_message(push("message")));
  CHECK_FALSE(redis::is_message(push("subscribe")));
  CHECK_FALSE(redis::is_message(bulk("message")));
  auto status = push("message");
  status.elements[0].type = Reply::Type::status;
  CHECK_FALSE(redis::is_message(status));
  CHECK_FALSE(redis::is_message(Reply{}));
}
