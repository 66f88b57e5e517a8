#include <rlock/cli/exit_codes.hpp>
#include <rlock/store/replies.hpp>
#include <rlock/util/error.hpp>

#include <catch2/catch.hpp>

#include "replies.hpp"
#include "thrown.hpp"

using namespace std::chrono_literals;
using namespace rlock;
using redis::Reply;
using namespace test_replies;
using test_thrown::failure_of;

namespace {

const std::string k_what = "cannot acquire lock 'x'";

// acquire.lua's and peek.lua's reply for a lock held by alice.
Reply
held_reply() {
  return array({integer(0),
                integer(2500),
                bulk("alice@web-1:4242"),
                bulk("make deploy"),
                integer(3),
                integer(30'000),
                integer(27'500)});
}

// The grant in an answer, which must be one.
template <class Answer>
lock::Granted
granted(const Answer& answer) {
  REQUIRE(std::holds_alternative<lock::Granted>(answer));
  return std::get<lock::Granted>(answer);
}

// Who holds the lock, in an answer that must be busy.
template <class Answer>
lock::Busy
busy(const Answer& answer) {
  REQUIRE(std::holds_alternative<lock::Busy>(answer));
  return std::get<lock::Busy>(answer);
}

} // namespace

TEST_CASE("decode_acquire: acquired with its fence") {
  const auto attempt = granted(lock::decode_acquire(
      array({integer(1), integer(1'700'000'000'123'456)}), k_what));
  CHECK(attempt.fence == 1'700'000'000'123'456);
  CHECK(attempt.slot == -1);
}

TEST_CASE("decode_acquire: a semaphore's permit with its slot") {
  const auto attempt = granted(lock::decode_acquire(
      array({integer(1), integer(1'700'000'000'123'456), integer(2)}), k_what));
  CHECK(attempt.fence == 1'700'000'000'123'456);
  CHECK(attempt.slot == 2);
  // A plain lock has no slot.
  CHECK(granted(lock::decode_acquire(array({integer(1), integer(7)}), k_what))
            .slot
        == -1);
}

TEST_CASE("decode_acquire: held under another limit") {
  const auto semaphore =
      busy(lock::decode_acquire(array({integer(2), integer(3)}), k_what));
  CHECK(semaphore.limit_conflict == 3);
  const auto plain =
      busy(lock::decode_acquire(array({integer(2), integer(0)}), k_what));
  CHECK(plain.limit_conflict == 0);
}

TEST_CASE("decode_lock_state: a semaphore's live holders by slot") {
  lock::LockState state;
  state.key = "rlock:{sem}";
  lock::decode_lock_state(state,
                          array({bulk("limit"),
                                 bulk("3"),
                                 bulk("b:slot"),
                                 bulk("1"),
                                 bulk("b:fence"),
                                 bulk("20"),
                                 bulk("b:user"),
                                 bulk("bob"),
                                 bulk("a:slot"),
                                 bulk("0"),
                                 bulk("a:fence"),
                                 bulk("10"),
                                 bulk("d:slot"),
                                 bulk("2")}),
                          integer(9000),
                          array({bulk("d"),
                                 bulk("1000"),
                                 bulk("b"),
                                 bulk("5000"),
                                 bulk("a"),
                                 bulk("9000")}),
                          1500);
  CHECK(state.held);
  CHECK(state.limit == 3);
  // d's lease ended at 1000, before the server's now.
  REQUIRE(state.holders.size() == 2);
  CHECK(state.holders[0].token == "a");
  CHECK(state.holders[0].fence == 10);
  CHECK(state.holders[0].ttl_ms == 7500);
  CHECK(state.holders[1].token == "b");
  CHECK(state.holders[1].slot == 1);
  CHECK(state.holders[1].user == "bob");
  CHECK(state.token.empty());
}

TEST_CASE("decode_acquire: busy, with the holder") {
  const auto attempt = busy(lock::decode_acquire(held_reply(), k_what));
  CHECK(attempt.retry_ms == 2500);
  CHECK(attempt.holder == "alice@web-1:4242");
  CHECK(attempt.command == "make deploy");
  CHECK(attempt.place == 3);
  CHECK(attempt.holder_ttl_ms == 30'000);
  CHECK(attempt.held_ms == 27'500);
  CHECK(attempt.held_back.empty());
  CHECK_FALSE(attempt.limit_conflict);
}

TEST_CASE("decode_acquire: a shorter busy reply leaves the rest unknown") {
  const auto bare =
      busy(lock::decode_acquire(array({integer(0), integer(-1)}), k_what));
  CHECK(bare.retry_ms == -1);
  CHECK(bare.holder.empty());
  CHECK(bare.place == 0);
  auto six = held_reply();
  six.elements.pop_back();
  const auto attempt = busy(lock::decode_acquire(six, k_what));
  CHECK(attempt.holder_ttl_ms == 30'000);
  CHECK(attempt.held_ms == 0);
}

TEST_CASE("decode_acquire: nil where a string is expected reads as empty") {
  auto reply = held_reply();
  reply.elements[2] = nil();
  reply.elements[3] = nil();
  const auto attempt = busy(lock::decode_acquire(reply, k_what));
  CHECK(attempt.holder.empty());
  CHECK(attempt.command.empty());
  CHECK(attempt.place == 3);
}

TEST_CASE("decode_acquire: error replies") {
  CHECK(failure_of([] {
          return lock::decode_acquire(error("ERR something broke"), k_what);
        })
        == "cannot acquire lock 'x': ERR something broke");
  CHECK(failure_of([] {
          return lock::decode_acquire(error("LOADING loading the dataset"),
                                      k_what);
        })
        == "cannot acquire lock 'x': LOADING loading the dataset");
  CHECK(failure_of([] {
          return lock::decode_acquire(error("NOAUTH Authentication required."),
                                      k_what);
        })
        == "cannot acquire lock 'x': the server wants a password (give it "
           "with a password file, the environment or the URL): NOAUTH "
           "Authentication required.");
  // A reply read by a Connection carries where a password can be given
  // (ConnectOptions::password_sources, set by cli/).
  CHECK(failure_of([] {
          auto reply = error("NOAUTH Authentication required.");
          reply.password_sources = "a vault or a prayer";
          return lock::decode_acquire(reply, k_what);
        })
        == "cannot acquire lock 'x': the server wants a password (give it "
           "with a vault or a prayer): NOAUTH Authentication required.");
  // A server's text cannot forge a line.
  CHECK(failure_of([] {
          return lock::decode_acquire(error("ERR a\nrlock: b"), k_what);
        })
        == "cannot acquire lock 'x': ERR a\\nrlock: b");
}

TEST_CASE("decode_acquire: malformed replies") {
  const auto decode = [](Reply reply) {
    return failure_of([&] { return lock::decode_acquire(reply, k_what); });
  };
  const std::string unexpected = "cannot acquire lock 'x': unexpected reply";
  CHECK(decode(integer(1)) == unexpected);
  CHECK(decode(nil()) == unexpected);
  CHECK(decode(status("OK")) == unexpected);
  CHECK(decode(array({})) == unexpected);
  CHECK(decode(array({integer(1)})) == unexpected);
  CHECK(decode(array({bulk("1"), integer(5)}))
        == "cannot acquire lock 'x': unexpected reply type 1");
  CHECK(decode(array({integer(1), nil()}))
        == "cannot acquire lock 'x': unexpected reply type 4");
  CHECK(decode(array({integer(0), bulk("2500")}))
        == "cannot acquire lock 'x': unexpected reply type 1");
  auto holder_not_string = held_reply();
  holder_not_string.elements[2] = integer(7);
  CHECK(decode(holder_not_string)
        == "cannot acquire lock 'x': unexpected reply type 3");
  auto command_an_array = held_reply();
  command_an_array.elements[3] = array({});
  CHECK(decode(command_an_array)
        == "cannot acquire lock 'x': unexpected reply type 2");
  auto place_not_integer = held_reply();
  place_not_integer.elements[4] = bulk("3");
  CHECK(decode(place_not_integer)
        == "cannot acquire lock 'x': unexpected reply type 1");
  auto held_not_integer = held_reply();
  held_not_integer.elements[6] = nil();
  CHECK(decode(held_not_integer)
        == "cannot acquire lock 'x': unexpected reply type 4");
}

TEST_CASE("decode_peek: free, or held as acquire reports it") {
  const std::string what = "cannot read lock 'x'";
  CHECK(std::holds_alternative<lock::Free>(
      lock::decode_peek(array({integer(1)}), what)));
  const auto seen = busy(lock::decode_peek(held_reply(), what));
  const auto refused = busy(lock::decode_acquire(held_reply(), what));
  CHECK(seen.retry_ms == refused.retry_ms);
  CHECK(seen.holder == refused.holder);
  CHECK(seen.command == refused.command);
  CHECK(seen.place == refused.place);
  CHECK(seen.holder_ttl_ms == refused.holder_ttl_ms);
  CHECK(seen.held_ms == refused.held_ms);
  CHECK(seen.held_ms == 27'500);
  // A bare "held" without details.
  const auto bare = busy(lock::decode_peek(array({integer(0)}), what));
  CHECK(bare.retry_ms == -1);
}

TEST_CASE("decode_peek: error and malformed replies") {
  const auto decode = [](Reply reply) {
    return failure_of(
        [&] { return lock::decode_peek(reply, "cannot read lock 'x'"); });
  };
  CHECK(decode(error("ERR no")) == "cannot read lock 'x': ERR no");
  CHECK(decode(array({})) == "cannot read lock 'x': unexpected reply");
  CHECK(decode(integer(1)) == "cannot read lock 'x': unexpected reply");
  CHECK(decode(nil()) == "cannot read lock 'x': unexpected reply");
  CHECK(decode(array({nil()}))
        == "cannot read lock 'x': unexpected reply type 4");
  auto holder_not_string = held_reply();
  holder_not_string.elements[2] = integer(7);
  CHECK(decode(holder_not_string)
        == "cannot read lock 'x': unexpected reply type 3");
}

TEST_CASE("decode_renew: held or not, with the PTTL found before") {
  const std::string what = "cannot renew lock 'x'";
  const auto renewed =
      lock::decode_renew(array({integer(1), integer(900)}), what);
  CHECK(renewed.held);
  CHECK(renewed.remaining_before_ms == 900);
  const auto lost = lock::decode_renew(array({integer(0), integer(-2)}), what);
  CHECK_FALSE(lost.held);
  CHECK(lost.remaining_before_ms == -2);
  const auto decode = [&](Reply reply) {
    return failure_of([&] { return lock::decode_renew(reply, what); });
  };
  CHECK(decode(error("BUSY running a script"))
        == "cannot renew lock 'x': BUSY running a script");
  CHECK(decode(integer(1)) == "cannot renew lock 'x': unexpected reply");
  CHECK(decode(array({integer(1)}))
        == "cannot renew lock 'x': unexpected reply");
  CHECK(decode(array({integer(1), integer(2), integer(3)}))
        == "cannot renew lock 'x': unexpected reply");
  CHECK(decode(array({integer(1), bulk("900")}))
        == "cannot renew lock 'x': unexpected reply type 1");
  CHECK(decode(array({nil(), integer(900)}))
        == "cannot renew lock 'x': unexpected reply type 4");
}

TEST_CASE("decode_yes_no: 1 is yes") {
  const std::string what = "cannot release lock 'x'";
  CHECK(lock::decode_yes_no(integer(1), what));
  CHECK_FALSE(lock::decode_yes_no(integer(0), what));
  CHECK_FALSE(lock::decode_yes_no(integer(2), what));
  const auto decode = [&](Reply reply) {
    return failure_of([&] { return lock::decode_yes_no(reply, what); });
  };
  CHECK(decode(error("WRONGTYPE Operation against a key holding the wrong "
                     "kind of value"))
        == "cannot release lock 'x': WRONGTYPE Operation against a key "
           "holding the wrong kind of value");
  CHECK(decode(nil()) == "cannot release lock 'x': unexpected reply type 4");
  CHECK(decode(bulk("1"))
        == "cannot release lock 'x': unexpected reply type 1");
  CHECK(decode(array({integer(1)}))
        == "cannot release lock 'x': unexpected reply type 2");
}

TEST_CASE("decode_pttl and decode_check: the lease's time left") {
  const std::string what = "cannot check lock 'x'";
  CHECK(lock::decode_pttl(integer(1500), what) == 1500);
  CHECK(lock::decode_pttl(integer(-2), what) == -2);
  CHECK(lock::decode_check(integer(1500), what) == Duration(1500ms));
  CHECK(lock::decode_check(integer(-1), what) == Duration::max());
  CHECK_FALSE(lock::decode_check(integer(-2), what));
  const auto decode = [&](Reply reply) {
    return failure_of([&] { return lock::decode_check(reply, what); });
  };
  CHECK(decode(error("ERR no")) == "cannot check lock 'x': ERR no");
  CHECK(decode(bulk("1500"))
        == "cannot check lock 'x': unexpected reply type 1");
  CHECK(decode(nil()) == "cannot check lock 'x': unexpected reply type 4");
  CHECK(failure_of([&] { return lock::decode_pttl(status("OK"), what); })
        == "cannot check lock 'x': unexpected reply type 5");
}

TEST_CASE("decode_force_release: whose lock it was, or nothing") {
  const std::string what = "cannot break lock 'x'";
  const auto broken = lock::decode_force_release(
      array({bulk("alice@web-1:4242"), bulk("make deploy"), bulk("t0k3n")}),
      what);
  REQUIRE(broken);
  CHECK(broken->holder == "alice@web-1:4242");
  CHECK(broken->command == "make deploy");
  CHECK(broken->token == "t0k3n");
  CHECK(broken->holders == 1);
  CHECK_FALSE(broken->shared);
  // A shared lock's holders: how many, and that they held it shared.
  const auto readers = lock::decode_force_release(
      array({bulk("a@h:1"), bulk("cat"), bulk("t"), integer(3), integer(1)}),
      what);
  REQUIRE(readers);
  CHECK(readers->holders == 3);
  CHECK(readers->shared);
  CHECK_FALSE(lock::decode_force_release(array({}), what));
  // Any other shape is taken as "it was free", as before.
  CHECK_FALSE(lock::decode_force_release(integer(0), what));
  CHECK_FALSE(lock::decode_force_release(nil(), what));
  CHECK_FALSE(lock::decode_force_release(array({bulk("a"), bulk("b")}), what));
  const auto blanks =
      lock::decode_force_release(array({nil(), nil(), nil()}), what);
  REQUIRE(blanks);
  CHECK(blanks->holder.empty());
  const auto decode = [&](Reply reply) {
    return failure_of([&] { return lock::decode_force_release(reply, what); });
  };
  CHECK(decode(error("ERR no")) == "cannot break lock 'x': ERR no");
  CHECK(decode(array({bulk("a"), integer(1), bulk("c")}))
        == "cannot break lock 'x': unexpected reply type 3");
}

TEST_CASE("decode_slot: number, done, time left") {
  const std::string what = "cannot read the current slot of 'x'";
  const auto slot = lock::decode_slot(
      array({integer(478'000), integer(1), integer(1200)}), what);
  CHECK(slot.number == 478'000);
  CHECK(slot.done);
  CHECK(slot.left == 1200ms);
  CHECK_FALSE(
      lock::decode_slot(array({integer(1), integer(0), integer(5)}), what)
          .done);
  const auto decode = [&](Reply reply) {
    return failure_of([&] { return lock::decode_slot(reply, what); });
  };
  CHECK(decode(error("ERR no")) == what + ": ERR no");
  CHECK(decode(integer(1)) == what + ": unexpected reply");
  CHECK(decode(array({integer(1), integer(0)})) == what + ": unexpected reply");
  CHECK(decode(array({integer(1), integer(0), integer(5), integer(6)}))
        == what + ": unexpected reply");
  CHECK(decode(array({integer(1), integer(0), nil()}))
        == what + ": unexpected reply type 4");
}

TEST_CASE("decode_server_time: TIME in ms since the epoch") {
  CHECK(lock::decode_server_time(array({bulk("1700000000"), bulk("123999")}))
        == 1'700'000'000'123);
  const auto decode = [](Reply reply) {
    return failure_of([&] { return lock::decode_server_time(reply); });
  };
  // Nil reads as an empty string, which is no number.
  CHECK(decode(array({nil(), nil()}))
        == "TIME: unexpected reply ('' is not an integer)");
  CHECK(decode(array({bulk("1700000000"), bulk("12x")}))
        == "TIME: unexpected reply ('12x' is not an integer)");
  CHECK(decode(error("NOPERM no TIME for you"))
        == "cannot read the server time: NOPERM no TIME for you");
  CHECK(decode(integer(1)) == "unexpected reply to TIME");
  CHECK(decode(array({bulk("1700000000")})) == "unexpected reply to TIME");
  CHECK(decode(array({integer(1700000000), bulk("0")}))
        == "TIME: unexpected reply type 3");
  CHECK(decode(array({bulk("99999999999999999"), bulk("0")}))
        == "unexpected reply to TIME");
}

TEST_CASE("decode_lock_state: the holder's fields and the lease") {
  lock::LockState state;
  state.key = "rlock:{x}";
  lock::decode_lock_state(state,
                          array({bulk("token"),       bulk("t0k3n"),
                                 bulk("fence"),       bulk("1700000000123456"),
                                 bulk("host"),        bulk("web-1"),
                                 bulk("pid"),         bulk("4242"),
                                 bulk("user"),        bulk("alice"),
                                 bulk("command"),     bulk("make deploy"),
                                 bulk("acquired_ms"), bulk("1700000000000"),
                                 bulk("renewals"),    bulk("7"),
                                 bulk("ttl_ms"),      bulk("30000"),
                                 bulk("someone's"),   bulk("field")}),
                          integer(12'000));
  CHECK(state.held);
  CHECK(state.ttl_ms == 12'000);
  CHECK(state.token == "t0k3n");
  CHECK(state.fence == 1'700'000'000'123'456);
  CHECK(state.host == "web-1");
  CHECK(state.pid == 4242);
  CHECK(state.user == "alice");
  CHECK(state.command == "make deploy");
  CHECK(state.acquired_ms == 1'700'000'000'000);
  CHECK(state.renewals == 7);
}

TEST_CASE("decode_lock_state: free, or odd fields") {
  lock::LockState state;
  state.key = "rlock:{x}";
  lock::decode_lock_state(state, array({}), integer(-2));
  CHECK_FALSE(state.held);
  // Gone between HGETALL and PTTL.
  lock::decode_lock_state(state, array({bulk("pid"), bulk("1")}), integer(-2));
  CHECK_FALSE(state.held);
  CHECK(state.pid == 0);
  // Without expiry; an odd last field is left out.
  lock::decode_lock_state(
      state,
      array({bulk("pid"), bulk("12"), bulk("user"), nil(), bulk("host")}),
      integer(-1));
  CHECK(state.held);
  CHECK(state.ttl_ms == -1);
  CHECK(state.pid == 12);
  CHECK(state.user.empty());
  CHECK(state.host.empty());
}

TEST_CASE("decode_lock_state: a number field that is not an integer is a "
          "malformed reply, not 0") {
  const auto decode = [](Reply hash, Reply holders = array({})) {
    return failure_of([&] {
      lock::LockState state;
      state.key = "rlock:{x}";
      lock::decode_lock_state(state, hash, integer(5), holders, 1000);
      return state;
    });
  };
  const std::string what = "cannot read lock rlock:{x}: unexpected reply";
  CHECK(decode(array({bulk("fence"), bulk("abc")}))
        == what + " ('abc' is not an integer)");
  CHECK(decode(array({bulk("pid"), bulk("12x")}))
        == what + " ('12x' is not an integer)");
  CHECK(decode(array({bulk("acquired_ms"), bulk("")}))
        == what + " ('' is not an integer)");
  CHECK(decode(array({bulk("renewals"), bulk(" 7")}))
        == what + " (' 7' is not an integer)");
  // A semaphore's limit, a holder's slot and its score.
  CHECK(decode(array({bulk("limit"), bulk("3x")}),
               array({bulk("a"), bulk("9000")}))
        == what + " ('3x' is not an integer)");
  CHECK(decode(array({bulk("limit"), bulk("3"), bulk("a:slot"), bulk("-")}),
               array({bulk("a"), bulk("9000")}))
        == what + " ('-' is not an integer)");
  CHECK(
      decode(array({bulk("limit"), bulk("3")}), array({bulk("a"), bulk("9e3")}))
      == what + " ('9e3' is not an integer)");
}

TEST_CASE("decode_lock_state: error and malformed replies") {
  const auto decode = [](Reply hash, Reply pttl) {
    return failure_of([&] {
      lock::LockState state;
      state.key = "rlock:{x}";
      lock::decode_lock_state(state, hash, pttl);
      return state;
    });
  };
  CHECK(decode(error("WRONGTYPE Operation against a key holding the wrong "
                     "kind of value"),
               integer(-1))
        == "cannot read lock rlock:{x}: WRONGTYPE Operation against a key "
           "holding the wrong kind of value");
  CHECK(decode(array({}), error("ERR no"))
        == "cannot read lock rlock:{x}: ERR no");
  CHECK(decode(array({}), bulk("5"))
        == "cannot read lock rlock:{x}: unexpected reply type 1");
  CHECK(decode(array({bulk("pid"), integer(5)}), integer(5))
        == "cannot read lock rlock:{x}: unexpected reply type 3");
  CHECK(decode(array({array({}), bulk("5")}), integer(5))
        == "cannot read lock rlock:{x}: unexpected reply type 2");
}

TEST_CASE("decode_waiters: the live waiters in the queue") {
  CHECK(lock::decode_waiters(integer(3), "rlock:{x}") == 3);
  CHECK(failure_of(
            [] { return lock::decode_waiters(error("ERR no"), "rlock:{x}"); })
        == "cannot read the queue of rlock:{x}: ERR no");
  CHECK(failure_of([] { return lock::decode_waiters(nil(), "rlock:{x}"); })
        == "ZCOUNT: unexpected reply type 4");
}

TEST_CASE("decode_scan: the cursor and the lock NAMEs") {
  const auto page = lock::decode_scan(array({bulk("1792"),
                                             array({bulk("rlock:{a}"),
                                                    bulk("rlock:{b}:queue"),
                                                    bulk("other"),
                                                    bulk("rlock:{c d}")})}),
                                      lock::KeySpace{"rlock:"});
  CHECK(page.cursor == "1792");
  CHECK(page.names == std::vector<std::string>{"a", "c d"});
  const auto last = lock::decode_scan(array({bulk("0"), array({})}),
                                      lock::KeySpace{"rlock:"});
  CHECK(last.cursor == "0");
  CHECK(last.names.empty());
  // A second element that is not an array holds no keys.
  CHECK(lock::decode_scan(array({bulk("0"), bulk("rlock:{a}")}),
                          lock::KeySpace{"rlock:"})
            .names.empty());
  const auto decode = [](Reply reply) {
    return failure_of(
        [&] { return lock::decode_scan(reply, lock::KeySpace{"rlock:"}); });
  };
  CHECK(decode(error("ERR no")) == "cannot list locks: ERR no");
  CHECK(decode(array({bulk("0")})) == "unexpected reply to SCAN");
  CHECK(decode(nil()) == "unexpected reply to SCAN");
  CHECK(decode(array({integer(0), array({})}))
        == "SCAN: unexpected reply type 3");
  CHECK(decode(array({bulk("0"), array({integer(1)})}))
        == "SCAN: unexpected reply type 3");
}
