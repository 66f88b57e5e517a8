#pragma once

#include <cstdint>
#include <string>

namespace rlock {

// Returns 128 random bits from the kernel as 32 lowercase hex characters.
// Throws Error when getrandom(2) fails.
std::string random_token();

// Returns a random number in [0, bound] for backoff jitter (not for secrets).
std::uint64_t random_below_or_equal(std::uint64_t bound);

} // namespace rlock
