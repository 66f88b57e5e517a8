#include <rlock/util/integer.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

using rlock::parse_integer;

TEST_CASE("parse_integer reads a whole decimal number, sign included") {
  CHECK(parse_integer("0") == 0);
  CHECK(parse_integer("42") == 42);
  CHECK(parse_integer("-7") == -7);
  CHECK(parse_integer("9223372036854775807")
        == std::numeric_limits<std::int64_t>::max());
  CHECK(parse_integer("-9223372036854775808")
        == std::numeric_limits<std::int64_t>::min());
}

TEST_CASE("parse_integer refuses anything but the digits") {
  for (const char* text :
       {"", "-", "+1", " 1", "1 ", "1\r", "1x", "x1", "1.5", "0x10", "1e3"}) {
    CAPTURE(text);
    CHECK_FALSE(parse_integer(text));
  }
}

TEST_CASE("parse_integer refuses a number out of int64 or of the range") {
  CHECK_FALSE(parse_integer("9223372036854775808"));
  CHECK_FALSE(parse_integer("-9223372036854775809"));
  CHECK(parse_integer("1", 1, 65535) == 1);
  CHECK(parse_integer("65535", 1, 65535) == 65535);
  CHECK_FALSE(parse_integer("0", 1, 65535));
  CHECK_FALSE(parse_integer("65536", 1, 65535));
}
