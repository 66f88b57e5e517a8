#include <rlock/cli/exit_codes.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/redis/script.hpp>
#include <rlock/store/string_layout.hpp>
#include <rlock/util/error.hpp>

#include <catch2/catch.hpp>

#include "replies.hpp"
#include "thrown.hpp"

using namespace std::chrono_literals;
using namespace rlock;
using namespace rlock::lock;
using redis::Reply;
using namespace test_replies;
using test_thrown::failure_of;

namespace {

const std::string k_what = "cannot acquire lock 'job'";

// Replies of another shape than the string scripts', each unreadable.
std::vector<Reply>
malformed_looks() {
  return {integer(1),
          nil(),
          bulk("string"),
          array({}),
          array({integer(1)}),
          array({bulk("string")}),
          array({bulk("string"), integer(7), integer(100)}),
          array({bulk("string"), bulk("tok"), bulk("100")}),
          array({bulk("string"), nil(), integer(100)})};
}

} // namespace

TEST_CASE("decode_string_acquire") {
  SECTION("a grant carries rlock's fence") {
    const auto attempt =
        decode_string_acquire(array({bulk("granted"), integer(7)}), k_what);
    REQUIRE(std::holds_alternative<Granted>(attempt));
    CHECK(std::get<Granted>(attempt).fence == 7);
  }
  SECTION("busy: the holder's value and PTTL, polled") {
    const auto attempt = decode_string_acquire(
        array({bulk("busy"), bulk("abc123"), integer(2500)}), k_what);
    REQUIRE(std::holds_alternative<Busy>(attempt));
    const auto& busy = std::get<Busy>(attempt);
    CHECK(busy.holder == "abc123");
    CHECK(busy.retry_ms == 2500);
    CHECK(busy.holders == 1);
    CHECK(busy.polled);
  }
  SECTION("a key of another type is never taken") {
    const auto message = failure_of([] {
      return decode_string_acquire(array({bulk("wrongtype"), bulk("hash")}),
                                   k_what);
    });
    CHECK(message.starts_with(k_what + ": the key holds a hash, not a string"));
  }
  SECTION("malformed replies") {
    const std::vector<Reply> replies = {
        integer(1),
        nil(),
        array({}),
        array({bulk("granted")}),
        array({bulk("granted"), bulk("7")}),
        array({bulk("busy"), bulk("abc")}),
        array({bulk("busy"), integer(1), integer(2)}),
        array({bulk("wrongtype")}),
        array({bulk("maybe"), integer(1)}),
        array({integer(1), integer(7)})};
    for (const auto& reply : replies) {
      CHECK(failure_of([&] {
              return decode_string_acquire(reply, k_what);
            }).starts_with(k_what + ": unexpected reply"));
    }
  }
  SECTION("an error reply") {
    CHECK(failure_of([] {
            return decode_string_acquire(error("ERR boom"), k_what);
          }).find("boom")
          != std::string::npos);
  }
}

TEST_CASE("decode_string_peek") {
  CHECK(std::holds_alternative<Free>(
      decode_string_peek(array({bulk("none")}), k_what)));
  const auto held = decode_string_peek(
      array({bulk("string"), bulk("tok"), integer(900)}), k_what);
  REQUIRE(std::holds_alternative<Busy>(held));
  CHECK(std::get<Busy>(held).holder == "tok");
  CHECK(std::get<Busy>(held).retry_ms == 900);
  CHECK(std::get<Busy>(held).polled);
  CHECK(failure_of([] {
          return decode_string_peek(array({bulk("zset"), nil(), integer(-1)}),
                                    k_what);
        }).find("holds a zset, not a string")
        != std::string::npos);
  for (const auto& reply : malformed_looks()) {
    failure_of([&] { return decode_string_peek(reply, k_what); });
  }
}

TEST_CASE("decode_string_check") {
  const auto look = [](std::string value, long long pttl) {
    return array({bulk("string"), bulk(std::move(value)), integer(pttl)});
  };
  CHECK(decode_string_check(look("tok", 1500), "tok", k_what) == 1500ms);
  CHECK(decode_string_check(look("tok", -1), "tok", k_what) == Duration::max());
  CHECK_FALSE(decode_string_check(look("other", 1500), "tok", k_what));
  CHECK_FALSE(decode_string_check(look("tok", 1500), "", k_what));
  // ShedLock's value ends in ":<token>".
  CHECK(decode_string_check(look("ADDED:x@h:tok", 10), "tok", k_what) == 10ms);
  CHECK_FALSE(decode_string_check(array({bulk("none")}), "tok", k_what));
  CHECK_FALSE(decode_string_check(
      array({bulk("hash"), nil(), integer(5)}), "tok", k_what));
  failure_of([] { return decode_string_check(integer(1), "tok", k_what); });
  failure_of([] {
    return decode_string_check(
        array({bulk("string"), bulk("tok")}), "tok", k_what);
  });
  failure_of([] {
    return decode_string_check(
        array({bulk("string"), integer(3), integer(5)}), "tok", k_what);
  });
}

TEST_CASE("decode_string_renew") {
  const auto held = decode_string_renew(integer(1200), k_what);
  CHECK(held.held);
  CHECK(held.remaining_before_ms == 1200);
  CHECK(decode_string_renew(integer(-1), k_what).held);
  CHECK_FALSE(decode_string_renew(integer(-2), k_what).held);
  failure_of([] { return decode_string_renew(integer(-3), k_what); });
  failure_of([] { return decode_string_renew(bulk("1"), k_what); });
  failure_of([] { return decode_string_renew(nil(), k_what); });
  failure_of([] { return decode_string_renew(array({integer(1)}), k_what); });
}

TEST_CASE("decode_string_force_release") {
  CHECK_FALSE(decode_string_force_release(array({bulk("none")}), k_what));
  const auto broken = decode_string_force_release(
      array({bulk("string"), bulk("tok"), integer(5)}), k_what);
  REQUIRE(broken);
  CHECK(broken->token == "tok");
  failure_of([] {
    return decode_string_force_release(array({bulk("list"), nil(), integer(5)}),
                                       k_what);
  });
  for (const auto& reply : malformed_looks()) {
    failure_of([&] { return decode_string_force_release(reply, k_what); });
  }
}

TEST_CASE("StringLayout") {
  Compat compat;
  compat.style = LockStyle::string;
  const StringLayout layout(compat, "rlock:");
  const std::string token = "tok";
  SECTION("the key is NAME; rlock's fence counter sits beside it") {
    CHECK(layout.key_of("job") == "job");
    LockRequest request;
    request.name = "job";
    request.token = token;
    request.ttl = 1500ms;
    const auto call = layout.acquire_call(request, {});
    CHECK(call.keys == std::vector<std::string>{"job", "rlock:{job}:fence"});
    CHECK(call.args == std::vector<std::string>{"tok", "1500"});
    CHECK(layout.raise_fence_call("job", token, 9).keys
          == std::vector<std::string>{"rlock:{job}:fence"});
    CHECK(layout.raise_fence_call("job", token, 9).args
          == std::vector<std::string>{"9"});
  }
  SECTION("an undo wakes nobody; a release wakes rlock's waiters") {
    CHECK(layout.release_call("job", token, false).args[1] == "quiet");
    CHECK(layout.release_call("job", token, true).args[1] == "wake");
    CHECK(layout.decode_release(integer(1), k_what));
    CHECK_FALSE(layout.decode_release(integer(0), k_what));
    failure_of([&] { return layout.decode_release(integer(2), k_what); });
  }
  SECTION("renewing compares: exact or at least, never a zero TTL") {
    const auto call = layout.renew_call("job", token, 2s, RenewMode::at_least);
    CHECK(call.keys == std::vector<std::string>{"job"});
    CHECK(call.args == std::vector<std::string>{"tok", "2000", "at_least"});
    try {
      (void)layout.renew_call("job", token, Duration::zero(), RenewMode::exact);
      FAIL("no error thrown");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::bad_input);
    }
  }
  SECTION("no queue and no record of runs") {
    CHECK_FALSE(layout.leave_queue_call("job", token));
    CHECK(layout.polled());
    CHECK_THROWS_AS(layout.slot_call("job", 1s), Error);
    CHECK_THROWS_AS(layout.mark_slot_call("job", 1, 1s), Error);
  }
  SECTION("rlock's own layout keeps its queue") {
    const auto own = rlock_layout("rlock:");
    CHECK(own->key_of("job") == "rlock:{job}");
    CHECK(own->leave_queue_call("job", token));
    CHECK_FALSE(own->polled());
  }
}
