#include <rlock/util/duration.hpp>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using rlock::Duration;
using rlock::format_duration;
using rlock::format_seconds;
using rlock::parse_duration;

TEST_CASE("parse_duration accepts units, fractions and bare seconds") {
  const std::vector<std::pair<std::string, Duration>> good{
      {"500ms", 500ms},
      {"30s", 30s},
      {"5m", 5min},
      {"1h", 1h},
      {"1.5s", 1500ms},
      {"0.5", 500ms},
      {"10", 10s},
      {"0", 0s},
      {"0ms", 0ms},
      {"2.25m", 135s},
      {"0.001", 1ms},
      {"1.0000000001s", 1s},
      {"9223372036s", 9223372036s},
      // As strtod reads them, and so flock -w (its man page: -w .007).
      {".5", 500ms},
      {".007", 7ms},
      {"5.", 5s},
      {".5s", 500ms},
  };
  for (const auto& [text, expected] : good) {
    INFO(text);
    const auto result = parse_duration(text);
    REQUIRE(result);
    CHECK(result.value() == expected);
  }
}

TEST_CASE("parse_duration rejects malformed and out-of-range values") {
  const std::vector<std::string> bad{
      "",      "-1",          "-1s",          "+1s",
      " 1s",   "1s ",         "1 s",          "abc",
      "5x",    "1y",          "1d",           "nan",
      "NaN",   "inf",         "1e3",          "1E3",
      "0x10",  ".",           ".s",           "1..5",
      "1.5.s", "s",           "ms",           "1sm",
      "1S",    "9223372037s", "99999999999h", "18446744073709551616",
      "..5",   "-.5",         "+.5",
  };
  for (const auto& text : bad) {
    INFO(text);
    const auto result = parse_duration(text);
    CHECK_FALSE(result);
    CHECK_THAT(result.error(), Catch::Contains("'" + text + "'"));
  }
}

TEST_CASE("parse_duration explains negative and too large values") {
  CHECK_THAT(parse_duration("-5s").error(), Catch::Contains("negative"));
  CHECK_THAT(parse_duration("99999999999h").error(),
             Catch::Contains("too large"));
}

TEST_CASE("format_duration picks a readable unit") {
  CHECK(format_duration(350ms) == "350ms");
  CHECK(format_duration(28150ms) == "28.1s");
  CHECK(format_duration(130s) == "2m10s");
  CHECK(format_duration(3h + 5min) == "3h05m");
  CHECK(format_duration(0ms) == "0ms");
}

TEST_CASE("format_seconds drops trailing zeros") {
  CHECK(format_seconds(19700ms) == "19.7s");
  CHECK(format_seconds(30s) == "30s");
  CHECK(format_seconds(5ms) == "0.005s");
}

TEST_CASE("to_ms gives whole milliseconds, cut toward zero") {
  CHECK(rlock::to_ms(30s) == 30'000);
  CHECK(rlock::to_ms(1999us) == 1);
  CHECK(rlock::to_ms(999us) == 0);
  CHECK(rlock::to_ms(-1500us) == -1);
  CHECK(rlock::to_ms(Duration::max()) == Duration::max().count() / 1'000'000);
}
