#include <rlock/util/log.hpp>

#include <unistd.h>

#include <atomic>

namespace rlock::log {

namespace {

std::atomic<Level> g_level{Level::normal};

// One write(2) per line, so lines from the renewal thread never interleave.
void
write_line(const std::string& text) {
  const std::string line = "rlock: " + text + "\n";
  std::size_t written = 0;
  while (written < line.size()) {
    const auto n =
        ::write(STDERR_FILENO, line.data() + written, line.size() - written);
    if (n <= 0) {
      return;
    }
    written += static_cast<std::size_t>(n);
  }
}

} // namespace

void
set_level(Level level) {
  g_level = level;
}

void
error(const std::string& message) {
  write_line(message);
}

void
warning(const std::string& message) {
  if (g_level != Level::quiet) {
    write_line("warning: " + message);
  }
}

void
notice(const std::string& message) {
  if (g_level != Level::quiet) {
    write_line(message);
  }
}

void
info(const std::string& message) {
  if (g_level == Level::verbose) {
    write_line(message);
  }
}

} // namespace rlock::log
