#include <rlock/lock/cluster_retry.hpp>

#include <catch2/catch.hpp>

using rlock::lock::cluster::k_max_tries;
using rlock::lock::cluster::Retry;
using rlock::lock::cluster::retry_after;
using rlock::lock::cluster::StepTry;
using rlock::redis::Failure;
using rlock::redis::FailureKind;
using rlock::redis::HostPort;
using Action = Retry::Action;

namespace {

const HostPort k_master{"10.0.0.1", 7000};
const HostPort k_other{"10.0.0.2", 7001};

// An error reply of a cluster node, as the connection reports it.
Failure
error_reply(const std::string& text) {
  const auto code = text.substr(0, text.find(' '));
  return Failure(FailureKind::server_error, "EVALSHA: " + text, code, text);
}

// The first send of a step, to the slot's master.
StepTry
first_send() {
  return StepTry{k_master, false, false, 1, false};
}

} // namespace

TEST_CASE("MOVED: follow to the named node at once, remember it for the slot "
          "and read the map again") {
  const auto retry =
      retry_after(error_reply("MOVED 3999 10.0.0.2:7001"), first_send());
  CHECK(retry.action == Action::follow);
  CHECK(retry.target == k_other);
  CHECK(retry.moved);
  CHECK_FALSE(retry.asking);
}

TEST_CASE("ASK: send ASKING to the named node, map not re-read") {
  const auto retry =
      retry_after(error_reply("ASK 3999 10.0.0.2:7001"), first_send());
  CHECK(retry.action == Action::follow);
  CHECK(retry.target == k_other);
  CHECK(retry.asking);
  CHECK_FALSE(retry.moved);
}

TEST_CASE("a redirection to a node of unknown host: the same host as the node "
          "that answered") {
  const auto retry = retry_after(error_reply("MOVED 3999 :7001"), first_send());
  CHECK(retry.action == Action::follow);
  CHECK(retry.target == HostPort{"10.0.0.1", 7001});
}

TEST_CASE("TRYAGAIN: wait a moment and ask the slot's master again, not a "
          "redirection") {
  const auto retry = retry_after(
      error_reply("TRYAGAIN Multiple keys request during rehashing of slot"),
      first_send());
  CHECK(retry.action == Action::pause);
  CHECK_FALSE(retry.moved);
  CHECK_FALSE(retry.asking);
  CHECK(retry.target == HostPort{});
}

TEST_CASE("a redirection after ASKING (the target did not take it): wait for "
          "the migration to end, not another ASK") {
  const StepTry asked{k_other, true, true, 2, false};
  CHECK(retry_after(error_reply("ASK 3999 10.0.0.2:7001"), asked).action
        == Action::pause);
  CHECK(retry_after(error_reply("MOVED 3999 10.0.0.1:7000"), asked).action
        == Action::pause);
}

TEST_CASE("the slot's master does not answer: a failover under way, read the "
          "map again") {
  for (const auto kind :
       {FailureKind::refused, FailureKind::timed_out, FailureKind::closed}) {
    const auto retry = retry_after(Failure(kind, "no answer"), first_send());
    CHECK(retry.action == Action::master_down);
  }
}

TEST_CASE("a node a redirection pointed to does not answer: the failure "
          "stands, the slot's master is not suspected") {
  const StepTry followed{k_other, true, false, 2, false};
  CHECK(
      retry_after(Failure(FailureKind::timed_out, "no answer"), followed).action
      == Action::give_up);
}

TEST_CASE("CLUSTERDOWN: check that the cluster was ever served in full, then "
          "the failure stands") {
  const auto retry =
      retry_after(error_reply("CLUSTERDOWN The cluster is down"), first_send());
  CHECK(retry.action == Action::give_up);
  CHECK(retry.check_coverage);
  CHECK_FALSE(
      retry_after(error_reply("TRYAGAIN again"), first_send()).check_coverage);
}

TEST_CASE("an error that is not the cluster's (OOM, BUSY, garbled "
          "redirection): the failure stands") {
  for (const auto* text : {"OOM command not allowed",
                           "BUSY Redis is busy",
                           "MOVED nonsense",
                           "ERR unknown command"}) {
    CAPTURE(text);
    CHECK(retry_after(error_reply(text), first_send()) == Retry{});
  }
  CHECK(retry_after(Failure(FailureKind::unexpected_reply, "odd"), first_send())
        == Retry{});
}

TEST_CASE("a slot still moving after 20 tries: give up as TRYAGAIN; a MOVED "
          "is still remembered") {
  StepTry last = first_send();
  last.tries = k_max_tries;
  const auto moved = retry_after(error_reply("MOVED 3999 10.0.0.2:7001"), last);
  CHECK(moved.action == Action::still_moving);
  CHECK(moved.moved);
  CHECK(moved.target == k_other);
  CHECK(retry_after(error_reply("TRYAGAIN again"), last).action
        == Action::still_moving);
  last.tries = k_max_tries - 1;
  CHECK(retry_after(error_reply("TRYAGAIN again"), last).action
        == Action::pause);
  CHECK(retry_after(error_reply("ASK 3999 10.0.0.2:7001"), last).action
        == Action::follow);
}

TEST_CASE("TRYAGAIN when a pause would pass the deadline: give up at once; a "
          "redirection is still followed") {
  StepTry late = first_send();
  late.pause_passes_deadline = true;
  CHECK(retry_after(error_reply("TRYAGAIN again"), late).action
        == Action::still_moving);
  CHECK(retry_after(error_reply("MOVED 3999 10.0.0.2:7001"), late).action
        == Action::follow);
}

TEST_CASE("a failure that is not the cluster's stands even at the last try") {
  StepTry last = first_send();
  last.tries = k_max_tries;
  last.pause_passes_deadline = true;
  CHECK(retry_after(error_reply("OOM no"), last).action == Action::give_up);
}
