#include <rlock/redis/reply_reader.hpp>

#include <catch2/catch.hpp>

using rlock::redis::ProtocolError;
using rlock::redis::Reply;
using rlock::redis::ReplyLimits;
using rlock::redis::ReplyReader;
using rlock::redis::ReplyTooLarge;

namespace {

// Feeds `bytes` one chunk at a time and returns every reply's type; throws
// as the reader does.
std::vector<Reply::Type>
types_of(const std::string& bytes, std::size_t chunk) {
  ReplyReader reader;
  std::vector<Reply::Type> types;
  for (std::size_t at = 0; at < bytes.size(); at += chunk) {
    reader.feed(std::string_view(bytes).substr(at, chunk));
    while (auto reply = reader.next()) {
      types.push_back(reply->type);
    }
  }
  return types;
}

// Returns what feeding `bytes` (and reading) throws; fails when nothing is.
std::string
refusal_of(const std::string& bytes, std::size_t chunk = 4096) {
  try {
    (void)types_of(bytes, chunk);
  } catch (const ReplyTooLarge& e) {
    return e.what();
  } catch (const ProtocolError& e) {
    return std::string("protocol error: ") + e.what();
  }
  FAIL("the reader took " << bytes.substr(0, 40));
  return {};
}

} // namespace

TEST_CASE("ReplyReader refuses an array count before hiredis allocates it") {
  CHECK(refusal_of("*1700000000\r\n")
        == "an array of 1700000000 elements (at most 1048576 elements in "
           "one reply)");
  CHECK_THAT(refusal_of("*99999999999999999999999\r\n"),
             Catch::StartsWith("an array of 99999999999999999999999"));
  // The limit counts every element of one reply, nested arrays included.
  CHECK_THAT(refusal_of("*2\r\n*1048575\r\n"),
             Catch::StartsWith("an array of 1048575 elements"));
  CHECK_THAT(refusal_of("%600000\r\n"),
             Catch::StartsWith("a map of 600000 pairs"));
}

TEST_CASE("ReplyReader refuses arrays nested deeper than hiredis 0.14 reads") {
  std::string nested; // all but the innermost array
  for (std::size_t i = 1; i < ReplyLimits::k_max_depth; ++i) {
    nested += "*1\r\n";
  }
  CHECK(types_of(nested + "*1\r\n:1\r\n", 3)
        == std::vector{Reply::Type::array});
  CHECK(types_of(nested + "*0\r\n" + nested + "*-1\r\n", 5)
        == std::vector{Reply::Type::array, Reply::Type::array});
  // Before hiredis reads it (hiredis 0.14 would refuse it too, 1.x not).
  CHECK(refusal_of(nested + "*1\r\n*1\r\n:1\r\n")
        == "arrays nested more than 8 deep");
  CHECK(refusal_of(nested + "*1\r\n*0\r\n")
        == "arrays nested more than 8 deep");
}

TEST_CASE("ReplyReader refuses long strings and lines") {
  CHECK(refusal_of("$2000000000\r\nabc")
        == "a string of 2000000000 bytes (at most 67108864)");
  const std::string line = "+" + std::string(ReplyLimits::k_max_length, 'a');
  CHECK(refusal_of(line, 1 << 20) == "a line of more than 67108864 bytes");
}

TEST_CASE("ReplyReader refuses a length that is not a plain number") {
  CHECK(refusal_of("$12x\r\n") == "protocol error: bad length in '$12x'");
  CHECK(refusal_of("*+5\r\n") == "protocol error: bad length in '*+5'");
  CHECK_THAT(refusal_of("$" + std::string(40, '0') + "5\r\n"),
             Catch::StartsWith("protocol error: bad length in '$000")
                 && Catch::EndsWith("'..."));
  // One line, whatever the server sent.
  CHECK(refusal_of("*:0\r:0\r\n")
        == "protocol error: bad length in '*:0\\x0D:0'");
}

TEST_CASE("ReplyReader ends a line at CRLF only, as hiredis does") {
  // Found by fuzz_reply: the LF alone does not end the error line, so
  // "*1700000000" is a header, not the payload of "$5".
  CHECK_THAT(refusal_of("-3\f\n$5\r\n*1700000000\r\n", 1),
             Catch::StartsWith("an array of 1700000000 elements"));
  CHECK(types_of("-ERR a\nb\r\n+OK\r\n", 1)
        == std::vector{Reply::Type::error, Reply::Type::status});
}

TEST_CASE("ReplyReader keeps a count per reply, whatever the chunks") {
  // Replies at the limit pass, one after another, in any chunking: the
  // count starts again with each reply.
  std::string big = "*1048576\r\n";
  for (int i = 0; i < ReplyLimits::k_max_elements; ++i) {
    big += ":1\r\n";
  }
  const std::string bytes =
      big + "$3\r\n*99\r\n" + big + "*-1\r\n$-1\r\n*0\r\n";
  for (const std::size_t chunk : {std::size_t{1} << 20, std::size_t{7}}) {
    CHECK(types_of(bytes, chunk)
          == std::vector{Reply::Type::array,
                         Reply::Type::string,
                         Reply::Type::array,
                         Reply::Type::nil,
                         Reply::Type::nil,
                         Reply::Type::array});
  }
  // A bulk string's bytes are data, not headers.
  CHECK(types_of("$11\r\n*1700000000\r\n", 3)
        == std::vector{Reply::Type::string});
}

TEST_CASE("ReplyReader gives each reply's type and content") {
  using namespace std::string_view_literals;
  ReplyReader reader;
  reader.feed("*5\r\n$3\r\na\0b\r\n:-42\r\n$-1\r\n*1\r\n+OK\r\n*0\r\n"
              "-ERR no\r\n"sv);
  const auto array = reader.next();
  REQUIRE(array);
  REQUIRE(array->is_array());
  REQUIRE(array->elements.size() == 5);
  CHECK(array->elements[0].is_string());
  CHECK(array->elements[0].text == "a\0b"sv);
  CHECK(array->elements[1].type == Reply::Type::integer);
  CHECK(array->elements[1].integer == -42);
  CHECK(array->elements[2].is_nil());
  REQUIRE(array->elements[3].elements.size() == 1);
  CHECK(array->elements[3].elements[0].type == Reply::Type::status);
  CHECK(array->elements[3].elements[0].text == "OK");
  CHECK(array->elements[4].is_array());
  CHECK(array->elements[4].elements.empty());
  const auto error = reader.next();
  REQUIRE(error);
  CHECK(error->is_error());
  CHECK(error->text == "ERR no");
  CHECK_FALSE(reader.next());
}
