#pragma once

#include <rlock/util/expected.hpp>

#include <string>
#include <string_view>

namespace rlock::proc {

// Parses a signal given as a name ("TERM", "SIGTERM", "term", "RTMIN+2") or a
// number from 1 to SIGRTMAX.
Expected<int> parse_signal(std::string_view text);

// Returns the signal's short name ("TERM", "RTMIN+2"), or its number.
std::string signal_name(int signal);

} // namespace rlock::proc
