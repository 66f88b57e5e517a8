#include <rlock/cli/defaults.hpp>

namespace rlock::cli::defaults {

std::string
help_text(Duration duration) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(duration).count();
  if (ms == 0 || ms % 1000 != 0) {
    return std::to_string(ms) + "ms";
  }
  const auto s = ms / 1000;
  if (s % 3600 == 0) {
    return std::to_string(s / 3600) + "h";
  }
  if (s % 60 == 0) {
    return std::to_string(s / 60) + "m";
  }
  return std::to_string(s) + "s";
}

} // namespace rlock::cli::defaults
