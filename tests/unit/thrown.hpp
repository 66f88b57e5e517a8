// What a step throws, for tests of decoders that fail.
#pragma once

#include <rlock/cli/exit_codes.hpp>
#include <rlock/util/error.hpp>

#include <catch2/catch.hpp>

#include <string>

namespace test_thrown {

// Returns the message of the Error (exit 69) that `decode` throws; fails
// when it throws nothing.
template <typename Decode>
std::string
failure_of(Decode&& decode) {
  try {
    (void)decode();
  } catch (const rlock::Error& e) {
    CHECK(rlock::exit_code::for_error(e.kind())
          == rlock::exit_code::k_unavailable);
    return e.what();
  }
  FAIL("nothing was thrown");
  return {};
}

} // namespace test_thrown
