#include <rlock/proc/process_info.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

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

namespace {

struct ProcessEntry {
  pid_t pid;
  pid_t parent;
  char state;
};

// Reads /proc/PID/stat: the state and parent come after the ")" that ends
// the command name, which may itself contain spaces and parentheses.
std::vector<ProcessEntry>
all_processes() {
  std::vector<ProcessEntry> entries;
  std::error_code error;
  for (const auto& dir : std::filesystem::directory_iterator("/proc", error)) {
    const auto name = dir.path().filename().string();
    pid_t pid = 0;
    const auto [ptr, ec] =
        std::from_chars(name.data(), name.data() + name.size(), pid);
    if (ec != std::errc() || ptr != name.data() + name.size()) {
      continue;
    }
    std::ifstream file(dir.path() / "stat");
    const std::string stat((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size()) {
      continue;
    }
    char state = stat[close + 2];
    pid_t parent = 0;
    const auto* begin = stat.data() + close + 4;
    std::from_chars(begin, stat.data() + stat.size(), parent);
    entries.push_back({pid, parent, state});
  }
  return entries;
}

} // namespace

std::vector<pid_t>
descendants_of(pid_t root, pid_t excluded) {
  std::multimap<pid_t, pid_t> children;
  for (const auto& entry : all_processes()) {
    if (entry.state != 'Z') {
      children.emplace(entry.parent, entry.pid);
    }
  }
  std::vector<pid_t> found;
  std::vector<pid_t> pending{root};
  while (!pending.empty()) {
    const pid_t parent = pending.back();
    pending.pop_back();
    const auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      if (it->second != excluded) {
        found.push_back(it->second);
        pending.push_back(it->second);
      }
    }
  }
  return found;
}

void
reap_children_except(const std::vector<pid_t>& kept) {
  // Our own children only, from each thread's list: no walk over /proc.
  std::error_code error;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream file(task.path() / "children");
    pid_t pid = 0;
    while (file >> pid) {
      if (std::find(kept.begin(), kept.end(), pid) == kept.end()) {
        waitpid(pid, nullptr, WNOHANG);
      }
    }
  }
}

} // namespace rlock::proc
