#pragma once

#include <rlock/lock/lease.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace rlock::cli {

// Returns the status as an aligned table that fits `width` columns (the
// COMMAND column is cut to fit), one row per lock, free ones included.
std::string format_status_table(const lock::StatusSnapshot& snapshot,
                                std::size_t width = 80);

// Returns the status as a JSON array (see docs/status.md: --json), with a
// trailing newline. Each lock says where it is kept (`node`) when the store
// said (Cluster: with its `slot`), else when a `node` is given (the master of
// a Sentinel deployment). While the server holds new locks back
// (--restart-grace), each lock has `held_back_ms`: how long still.
std::string
format_status_json(const lock::StatusSnapshot& snapshot,
                   const std::string& node = {},
                   std::optional<std::int64_t> held_back_ms = std::nullopt);

// Returns the line status prints before the table for a replicated
// deployment: "sentinel: master 'mymaster' 127.0.0.1:7000 (3 of 3 sentinels
// agree); replicas 127.0.0.1:7001 online lag 0s, ..."; for a Cluster the
// masters, their replicas and the slot coverage: "cluster: 3 masters, all
// 16384 slots served; 127.0.0.1:7000: 5461 slots, 1 replica, lag 0s; ...".
std::string format_topology_line(const lock::DeploymentState& state);

} // namespace rlock::cli
