#include <rlock/proc/process_info.hpp>

#include <fstream>
#include <iterator>

namespace rlock::proc {

std::vector<std::string>
command_line_of(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/cmdline",
                     std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(file)),
                         std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\0', start);
    argv.push_back(text.substr(start, end - start));
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return argv;
}

} // namespace rlock::proc
