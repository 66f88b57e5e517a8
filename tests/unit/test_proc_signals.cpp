#include <rlock/proc/signals.hpp>

#include <catch2/catch.hpp>

#include <csignal>

using rlock::proc::parse_signal;
using rlock::proc::signal_name;

TEST_CASE("parse_signal accepts names in any case, with or without SIG") {
  for (const char* text : {"TERM", "SIGTERM", "term", "sigterm", "15"}) {
    INFO(text);
    const auto result = parse_signal(text);
    REQUIRE(result);
    CHECK(result.value() == SIGTERM);
  }
  CHECK(parse_signal("KILL").value() == SIGKILL);
  CHECK(parse_signal("usr1").value() == SIGUSR1);
  CHECK(parse_signal("RTMIN+2").value() == SIGRTMIN + 2);
  CHECK(parse_signal("RTMAX").value() == SIGRTMAX);
}

TEST_CASE("parse_signal rejects unknown names and numbers out of range") {
  for (const char* text :
       {"FOO", "", "0", "-1", "65", "SIG", "TERM2", "RTMIN+99", "1.5"}) {
    INFO(text);
    const auto result = parse_signal(text);
    CHECK_FALSE(result);
    CHECK_THAT(result.error(), Catch::Contains(std::string("'") + text + "'"));
  }
}

TEST_CASE("signal_name round-trips") {
  CHECK(signal_name(SIGTERM) == "TERM");
  CHECK(signal_name(SIGHUP) == "HUP");
  CHECK(signal_name(SIGRTMIN + 3) == "RTMIN+3");
  for (int signal = 1; signal <= SIGRTMAX; ++signal) {
    if (signal == 32 || signal == 33) {
      continue; // reserved by glibc, no name
    }
    INFO(signal);
    CHECK(parse_signal(signal_name(signal)).value() == signal);
  }
}
