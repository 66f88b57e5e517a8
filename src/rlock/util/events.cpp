#include <rlock/util/clock.hpp>
#include <rlock/util/duration.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/events.hpp>
#include <rlock/util/output.hpp>
#include <rlock/util/text.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rlock::events {

namespace {

int g_fd = -1;

} // namespace

void
open(const std::string& path) {
  if (path.empty()) {
    return;
  }
  if (path == "-") {
    g_fd = STDERR_FILENO;
    return;
  }
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw_usage("cannot open " + quote(path) + ": " + std::strerror(errno));
  }
  g_fd = fd;
}

void
emit(const std::string& event,
     const std::string& lock_name,
     nlohmann::ordered_json fields) {
  if (g_fd < 0) {
    return;
  }
  nlohmann::ordered_json line{
      {"event", event},
      {"name", lock_name},
      {"mono_ms", to_ms(boot_now())},
      {"time", format_iso8601_utc(wall_now_ms())},
  };
  line.update(fields);
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
      + "\n";
  output::write(g_fd, text);
}

} // namespace rlock::events
