#include <rlock/proc/command_output.hpp>
#include <rlock/proc/process_info.hpp>
#include <rlock/util/integer.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <limits>
#include <map>

namespace rlock::proc {

namespace {

// Returns the whole content of a /proc file, "" when it cannot be read: a
// process may exit between open and read, and that is no error here (no
// streams, which would throw).
std::string
read_proc_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return {};
  }
  std::string text;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

} // namespace

std::vector<pid_t>
numeric_entries(const char* path) {
  std::vector<pid_t> pids;
  DIR* dir = opendir(path);
  if (dir == nullptr) {
    return pids;
  }
  while (const dirent* entry = readdir(dir)) {
    const std::string_view name(entry->d_name);
    if (const auto pid =
            parse_integer(name, 0, std::numeric_limits<pid_t>::max())) {
      pids.push_back(static_cast<pid_t>(*pid));
    }
  }
  closedir(dir);
  return pids;
}

std::string
host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? name : "?";
}

std::string
user_name() {
  char buffer[4096];
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(geteuid(), &entry, buffer, sizeof(buffer), &found) == 0
      && found != nullptr) {
    return found->pw_name;
  }
  return std::to_string(geteuid());
}

std::vector<std::string>
command_line_of(pid_t pid) {
  const std::string text =
      read_proc_file("/proc/" + std::to_string(pid) + "/cmdline");
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
  for (const pid_t pid : numeric_entries("/proc")) {
    const std::string stat =
        read_proc_file("/proc/" + std::to_string(pid) + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size()) {
      continue; // gone meanwhile
    }
    const char state = stat[close + 2];
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

std::vector<pid_t>
processes_with_environment_entry(const std::string& entry) {
  std::vector<pid_t> found;
  for (const pid_t pid : numeric_entries("/proc")) {
    const std::string environment =
        read_proc_file("/proc/" + std::to_string(pid) + "/environ");
    std::size_t start = 0;
    while (start < environment.size()) {
      auto end = environment.find('\0', start);
      if (end == std::string::npos) {
        end = environment.size();
      }
      if (std::string_view(environment).substr(start, end - start) == entry) {
        found.push_back(pid);
        break;
      }
      start = end + 1;
    }
  }
  return found;
}

void
reap_children_except(const std::vector<pid_t>& kept) {
  // Our own children only, from each thread's list: no walk over /proc.
  for (const pid_t task : numeric_entries("/proc/self/task")) {
    const std::string children =
        read_proc_file("/proc/self/task/" + std::to_string(task) + "/children");
    const char* cursor = children.data();
    const char* end = children.data() + children.size();
    while (cursor < end) {
      pid_t pid = 0;
      const auto [ptr, ec] = std::from_chars(cursor, end, pid);
      if (ec != std::errc()) {
        ++cursor;
        continue;
      }
      cursor = ptr;
      if (std::find(kept.begin(), kept.end(), pid) == kept.end()) {
        // Not a password command's: the thread that runs it reaps it.
        with_command_children(pid, [pid](bool waited_for) {
          if (!waited_for) {
            waitpid(pid, nullptr, WNOHANG);
          }
        });
      }
    }
  }
}

} // namespace rlock::proc
