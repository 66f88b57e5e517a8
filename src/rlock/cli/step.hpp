#pragma once

#include <rlock/cli/options.hpp>

namespace rlock::cli {

// Runs acquire, extend, release, check or wait and returns the exit code:
// acquire 0 (token on stdout) or the conflict code; extend, release and check
// 0, or 1 when the token does not hold the lock; wait 0 when free, or the
// conflict code. Throws Error when Redis is unavailable.
int run_step(const StepOptions& options);

} // namespace rlock::cli
