// Arbitrary bytes from a "server", fed in chunks to the reply reader; every
// complete reply, and each element of it at any depth, goes through
// throw_if_error, integer_of and string_of. Those may throw Error, and the
// reader ProtocolError (ReplyTooLarge among them); anything else is a
// finding, and so is a reply larger than ReplyLimits allows.
#include <rlock/redis/connection.hpp>
#include <rlock/redis/reply_reader.hpp>
#include <rlock/util/error.hpp>

#include "fuzz.hpp"
#include <cstdint>

using namespace rlock;

namespace {

const std::string k_what = "fuzz";

// Calls `step`, which may throw only Error, with a one-line message.
template <typename Step>
void
expect_error_only(Step&& step) {
  try {
    step();
  } catch (const Error& e) {
    if (!fuzz::is_one_line(e.what())) {
      fuzz::finding("an error message is not one line", e.what());
    }
  }
}

void
inspect(const redis::Reply& reply) {
  expect_error_only([&] {
    const auto text = redis::string_of(reply, k_what);
    if (!reply.is_nil() && text != reply.text) {
      fuzz::finding("string_of changed the string", text);
    }
  });
  expect_error_only([&] { (void)redis::integer_of(reply, k_what); });
  if (!reply.is_array() && !reply.elements.empty()) {
    fuzz::finding("a reply that is not an array has elements");
  }
  for (const auto& element : reply.elements) {
    inspect(element);
  }
}

// Returns how many elements `reply` holds at every depth.
std::int64_t
elements_in(const redis::Reply& reply) {
  std::int64_t count = 0;
  for (const auto& element : reply.elements) {
    count += 1 + elements_in(element);
  }
  return count;
}

// A reply that got past ReplyLimits must be within them.
void
check_size(const redis::Reply& reply) {
  if (elements_in(reply) > redis::ReplyLimits::k_max_elements) {
    fuzz::finding("a reply has more elements than ReplyLimits allows",
                  std::to_string(elements_in(reply)));
  }
  if (static_cast<std::int64_t>(reply.text.size())
      > redis::ReplyLimits::k_max_length) {
    fuzz::finding("a string is longer than ReplyLimits allows",
                  std::to_string(reply.text.size()));
  }
}

// Takes every reply that is complete; false after a protocol error.
bool
drain(redis::ReplyReader& reader) {
  try {
    while (auto reply = reader.next()) {
      expect_error_only([&] { redis::throw_if_error(*reply, k_what); });
      check_size(*reply);
      inspect(*reply);
    }
  } catch (const redis::ProtocolError&) {
    return false;
  }
  return true;
}

} // namespace

// hiredis 0.14 allocates a multi-bulk reply's array as soon as it reads the
// count, with no limit: "*1700000000\r\n" asks for 13.6 GB. ReplyLimits
// refuses such a reply before hiredis reads it, so any allocation above
// 256 MB is a finding (ASan reports it) rather than an "Out of memory".
extern "C" const char*
__asan_default_options() {
  return "max_allocation_size_mb=256";
}

extern "C" int
LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  // The first byte sets how the bytes arrive: in chunks of 1 to 256.
  const std::size_t chunk = std::size_t{data[0]} + 1;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1,
                               size - 1);
  redis::ReplyReader reader;
  for (std::size_t at = 0; at < bytes.size(); at += chunk) {
    try {
      reader.feed(bytes.substr(at, chunk));
    } catch (const redis::ProtocolError&) {
      return 0;
    }
    if (!drain(reader)) {
      return 0;
    }
  }
  return 0;
}
