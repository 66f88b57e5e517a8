#include <rlock/util/log.hpp>
#include <rlock/util/output.hpp>

#include <unistd.h>

#include <atomic>

namespace rlock::log {

namespace {

std::atomic<Level> g_level{Level::normal};

void
write_line(const std::string& text) {
  output::write(STDERR_FILENO, "rlock: " + text + "\n");
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
