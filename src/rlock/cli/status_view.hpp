#pragma once

#include <rlock/lock/lease.hpp>

#include <string>

namespace rlock::cli {

// Returns the status as an aligned table that fits `width` columns (the
// COMMAND column is cut to fit), one row per lock, free ones included.
std::string format_status_table(const lock::StatusSnapshot& snapshot,
                                std::size_t width = 80);

// Returns the status as a JSON array (see README: status --json), with a
// trailing newline.
std::string format_status_json(const lock::StatusSnapshot& snapshot);

} // namespace rlock::cli
