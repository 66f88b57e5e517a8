#pragma once

#include <rlock/redis/connection.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace rlock::redis {

// A Lua script embedded at build time from src/rlock/redis/scripts/*.lua,
// with its SHA1 computed by CMake.
struct Script {
  std::string_view name;
  std::string_view source;
  std::string_view sha1;
};

// Returns the command that runs `script` by its SHA1 (`verb` EVALSHA) or
// its source (EVAL).
std::vector<std::string> script_command(const Script& script,
                                        std::string_view verb,
                                        const std::vector<std::string>& keys,
                                        const std::vector<std::string>& args);

// True when `reply` says the server does not have the script (NOSCRIPT).
bool is_noscript(const Reply& reply);

// Runs `script` with EVALSHA, and with EVAL when the server answers NOSCRIPT
// (after a restart or SCRIPT FLUSH), which also caches it again. Returns the
// reply, which may be an error reply; throws as Connection::command() does.
Reply run_script(Connection& connection,
                 const Script& script,
                 const std::vector<std::string>& keys,
                 const std::vector<std::string>& args);

} // namespace rlock::redis

// The scripts of the lock protocol, k_NAME_script for each scripts/NAME.lua
// (see their headers for KEYS and ARGV).
#include <rlock/redis/scripts.hpp>
