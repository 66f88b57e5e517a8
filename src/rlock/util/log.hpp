#pragma once

#include <string>

namespace rlock::log {

enum class Level { quiet, normal, verbose };

// Sets how much goes to stderr: errors always, warnings unless quiet,
// lifecycle lines only when verbose.
void set_level(Level level);

// Writes "rlock: <message>" to stderr, whatever the level.
void error(const std::string& message);

// Writes "rlock: warning: <message>" to stderr unless quiet.
void warning(const std::string& message);

// Writes "rlock: <message>" to stderr unless quiet.
void notice(const std::string& message);

// Writes "rlock: <message>" to stderr when verbose.
void info(const std::string& message);

} // namespace rlock::log
