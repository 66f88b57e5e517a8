#include <rlock/redis/reply_reader.hpp>

#include <catch2/catch.hpp>
#include <hiredis/hiredis.h>

using rlock::redis::ProtocolError;
using rlock::redis::ReplyLimits;
using rlock::redis::ReplyReader;
using rlock::redis::ReplyTooLarge;

namespace {

// Feeds `bytes` one chunk at a time and returns every reply's type; throws
// as the reader does.
std::vector<int>
types_of(const std::string& bytes, std::size_t chunk) {
  ReplyReader reader;
  std::vector<int> types;
  for (std::size_t at = 0; at < bytes.size(); at += chunk) {
    reader.feed(std::string_view(bytes).substr(at, chunk));
    while (auto reply = reader.next()) {
      types.push_back((*reply)->type);
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
        == std::vector<int>{REDIS_REPLY_ERROR, REDIS_REPLY_STATUS});
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
          == std::vector<int>{REDIS_REPLY_ARRAY,
                              REDIS_REPLY_STRING,
                              REDIS_REPLY_ARRAY,
                              REDIS_REPLY_NIL,
                              REDIS_REPLY_NIL,
                              REDIS_REPLY_ARRAY});
  }
  // A bulk string's bytes are data, not headers.
  CHECK(types_of("$11\r\n*1700000000\r\n", 3)
        == std::vector<int>{REDIS_REPLY_STRING});
}
