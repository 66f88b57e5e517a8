#pragma once

#include <rlock/cli/options.hpp>

namespace rlock::cli {

// Takes the lock, runs the command under it while the lease is renewed,
// releases it and returns the exit code (see util/exit_codes.hpp). Throws
// Error when Redis is unavailable or the command cannot be run.
int run(const RunOptions& options);

} // namespace rlock::cli
