#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace rlock::events {

// Opens the --events destination: a file (appended to) or "-" for stderr.
// Until then, emit() does nothing. Throws Error (usage) when the file cannot
// be opened.
void open(const std::string& path);

// Writes one JSON line {"event": name, "name": lock, "mono_ms", "time", ...}
// with `fields` merged in; safe from any thread. A write error is ignored:
// events must never stop the lock's work.
void emit(const std::string& event,
          const std::string& lock_name,
          nlohmann::ordered_json fields = nlohmann::ordered_json::object());

} // namespace rlock::events
