#include <rlock/util/text.hpp>

#include <catch2/catch.hpp>

using rlock::column_width;
using rlock::quote;
using rlock::shell_join;
using rlock::truncate_columns;

TEST_CASE("quote keeps a message on one line") {
  CHECK(quote("abc") == "'abc'");
  CHECK(quote("a\nb") == "'a\\nb'");
  CHECK(quote("a\tb") == "'a\\tb'");
  CHECK(quote(std::string("a\x01z")) == "'a\\x01z'");
  CHECK(quote("") == "''");
}

TEST_CASE("shell_join quotes only where needed") {
  CHECK(shell_join({"ls", "-l", "/tmp"}) == "ls -l /tmp");
  CHECK(shell_join({"sh", "-c", "echo a; exit 4"}) == "sh -c 'echo a; exit 4'");
  CHECK(shell_join({"echo", "it's"}) == "echo 'it'\\''s'");
  CHECK(shell_join({"printf", ""}) == "printf ''");
}

TEST_CASE("truncate_columns counts UTF-8 code points") {
  CHECK(truncate_columns("short", 10) == "short");
  CHECK(truncate_columns("abcdefghijkl", 8) == "abcde...");
  CHECK(column_width("héllo") == 5);
  CHECK(truncate_columns("héllo wörld", 8) == "héllo...");
}

TEST_CASE("truncate_middle keeps both ends") {
  using rlock::truncate_middle;
  CHECK(truncate_middle("short", 10) == "short");
  CHECK(truncate_middle("very-long-lock-name-variant-A", 15)
        == "very-l...iant-A");
  CHECK(truncate_middle("very-long-lock-name-variant-B", 15)
        == "very-l...iant-B");
  CHECK(rlock::column_width(truncate_middle("ünïcödé-ünïcödé-ünïcödé", 9))
        == 9);
}

TEST_CASE("printable escapes control characters without quoting") {
  CHECK(rlock::printable("sh -c 'a\nb'") == "sh -c 'a\\nb'");
  CHECK(rlock::printable("\x1b[31mRED") == "\\x1B[31mRED");
}
