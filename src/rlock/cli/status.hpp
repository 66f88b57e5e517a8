#pragma once

#include <rlock/cli/options.hpp>

namespace rlock::cli {

// Prints who holds which lock. Returns 0 when every named lock is held (or
// for a listing), 1 when a named lock is free. Throws Error when Redis is
// unavailable.
int run_status(const StatusOptions& options);

} // namespace rlock::cli
