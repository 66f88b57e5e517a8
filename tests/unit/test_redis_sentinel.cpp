#include <rlock/redis/failure.hpp>
#include <rlock/redis/sentinel.hpp>

#include <catch2/catch.hpp>

#include "replies.hpp"

using rlock::redis::Failure;
using rlock::redis::FailureKind;
using rlock::redis::HostPort;
using rlock::redis::majority_master;
using rlock::redis::MasterStanding;
using rlock::redis::SentinelView;
using rlock::redis::standing_of;
using rlock::redis::view_of;
using namespace test_replies;
using Kind = MasterStanding::Kind;

namespace {

// A sentinel that answered: it names `port` at `epoch`.
SentinelView
names(int port, std::int64_t epoch = 1, std::string flags = "master") {
  SentinelView view;
  view.sentinel = "127.0.0.1:2" + std::to_string(port);
  view.master = HostPort{"127.0.0.1", port};
  view.config_epoch = epoch;
  view.failover_in_progress =
      flags.find("failover_in_progress") != std::string::npos;
  view.down = flags.find("o_down") != std::string::npos;
  return view;
}

// A sentinel that did not answer.
SentinelView
silent(FailureKind kind = FailureKind::refused) {
  SentinelView view;
  view.sentinel = "127.0.0.1:29999";
  view.why = "connection refused";
  view.failure = kind;
  return view;
}

FailureKind
failure_of(const std::vector<SentinelView>& views, std::size_t configured) {
  try {
    majority_master(views, configured, "mymaster");
  } catch (const Failure& failure) {
    return failure.failure_kind();
  }
  FAIL("no failure");
  return FailureKind::refused;
}

} // namespace

TEST_CASE("view_of: the address named, SENTINEL MASTER's flags and config "
          "epoch") {
  const auto where = array({bulk("10.0.0.7"), bulk("7001")});
  const auto settings = array({bulk("name"),
                               bulk("mymaster"),
                               bulk("ip"),
                               bulk("10.0.0.7"),
                               bulk("port"),
                               bulk("7001"),
                               bulk("flags"),
                               bulk("master,failover_in_progress"),
                               bulk("config-epoch"),
                               bulk("7")});
  const auto view = view_of("s1:26379", "mymaster", where, settings);
  REQUIRE(view.master);
  CHECK(view.master->address() == "10.0.0.7:7001");
  CHECK(view.failover_in_progress);
  CHECK_FALSE(view.down);
  CHECK(view.config_epoch == 7);
  // Past the promotion the leader names the promoted replica while SENTINEL
  // MASTER still gives the old address: the failover has chosen.
  const auto promoted = view_of("s1:26379",
                                "mymaster",
                                array({bulk("10.0.0.8"), bulk("7001")}),
                                settings);
  CHECK(promoted.master->host == "10.0.0.8");
  CHECK_FALSE(promoted.failover_in_progress);

  const auto down =
      view_of("s1:26379",
              "mymaster",
              where,
              array({bulk("flags"), bulk("s_down,o_down,master")}));
  CHECK(down.down);
  CHECK_FALSE(down.failover_in_progress);
  CHECK(down.config_epoch == -1);
  // "failover_in_progress" only as a whole flag.
  CHECK_FALSE(
      view_of("s",
              "m",
              where,
              array({bulk("flags"), bulk("master,x_failover_in_progress")}))
          .failover_in_progress);

  const auto unknown = view_of("s1:26379", "mymaster", nil(), nil());
  CHECK_FALSE(unknown.master);
  CHECK_FALSE(unknown.failure);
  const auto refused = view_of(
      "s1:26379", "mymaster", error("NOAUTH Authentication required."), nil());
  CHECK(refused.failure == FailureKind::auth_refused);
  CHECK_FALSE(view_of("s", "m", array({bulk("h"), bulk("0")}), nil()).master);
}

TEST_CASE("majority_master: the master a majority of the configured "
          "sentinels names, not the first that answers") {
  // One stale sentinel first, two naming the real master.
  CHECK(majority_master({names(7009), names(7001), names(7001)}, 3, "m").port
        == 7001);
  // Two of three, the third silent.
  CHECK(majority_master({silent(), names(7001), names(7001)}, 3, "m").port
        == 7001);
  // One sentinel in the URL: it alone is the majority.
  CHECK(majority_master({names(7001)}, 1, "m").port == 7001);
  // Fewer than a majority answered: refused, or timed out when each did.
  CHECK(failure_of({names(7001), silent(), silent()}, 3)
        == FailureKind::refused);
  CHECK(failure_of({names(7001),
                    silent(FailureKind::timed_out),
                    silent(FailureKind::timed_out)},
                   3)
        == FailureKind::timed_out);
  CHECK(failure_of({silent(), silent(), silent()}, 3) == FailureKind::refused);
  // A login refused outweighs the rest.
  CHECK(failure_of({silent(FailureKind::auth_refused), silent(), names(1)}, 3)
        == FailureKind::auth_refused);
  // Two answered and disagree: a failover under way.
  CHECK(failure_of({names(7001), names(7002), silent()}, 3)
        == FailureKind::not_master);
  // Four configured: two of four is no majority.
  CHECK(failure_of({names(7001), names(7001), names(7002), silent()}, 4)
        == FailureKind::not_master);
  // A majority names the old master, one the new at a newer epoch.
  CHECK(failure_of({names(7001, 3), names(7001, 3), names(7002, 4)}, 3)
        == FailureKind::not_master);
  // The dissenter is older: the majority stands.
  CHECK(
      majority_master({names(7001, 4), names(7001, 4), names(7002, 3)}, 3, "m")
          .port
      == 7001);
  // Sentinels that answered without knowing the master.
  SentinelView unknown;
  unknown.sentinel = "s";
  unknown.why = "does not know master 'm'";
  CHECK(failure_of({unknown, unknown, unknown}, 3)
        == FailureKind::unexpected_reply);
}

TEST_CASE("standing_of: a confirmed write counts when a majority answered, "
          "each names its master and no failover is under way") {
  const std::string master = "127.0.0.1:7001";
  CHECK(
      standing_of({names(7001), names(7001), names(7001)}, 3, master, "m").kind
      == Kind::current);
  CHECK(standing_of({names(7001), silent(), names(7001)}, 3, master, "m").kind
        == Kind::current);
  // A graceful failover: the leader marks it, the others still name the
  // old master.
  const auto leading = standing_of(
      {names(7001, 1, "master,failover_in_progress"), names(7001), names(7001)},
      3,
      master,
      "m");
  CHECK(leading.kind == Kind::unsettled);
  CHECK_THAT(leading.why, Catch::Contains("failover"));
  // A sentinel's flags are those of the master it names.
  CHECK(standing_of({names(7002, 2, "master,failover_in_progress"),
                     names(7001),
                     names(7001)},
                    3,
                    master,
                    "m")
            .kind
        == Kind::unsettled);
  // A crash failover: the master is objectively down.
  CHECK(standing_of(
            {names(7001, 1, "s_down,o_down,master"), names(7001), names(7001)},
            3,
            master,
            "m")
            .kind
        == Kind::unsettled);
  // Too few answered.
  CHECK(standing_of({names(7001), silent(), silent()}, 3, master, "m").kind
        == Kind::unsettled);
  // One names another master: the write does not count.
  CHECK(standing_of({names(7001), names(7002, 2), names(7001)}, 3, master, "m")
            .kind
        == Kind::unsettled);
  // A majority names another master: elsewhere, and which.
  const auto moved = standing_of(
      {names(7002, 2), names(7002, 2), names(7001)}, 3, master, "m");
  CHECK(moved.kind == Kind::elsewhere);
  REQUIRE(moved.named);
  CHECK(moved.named->port == 7002);
  // ... unless the one naming ours saw a newer config.
  CHECK(standing_of(
            {names(7002, 2), names(7002, 2), names(7001, 3)}, 3, master, "m")
            .kind
        == Kind::unsettled);
}
