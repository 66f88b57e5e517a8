#include <rlock/proc/process_title.hpp>

#include <algorithm>
#include <cstring>

namespace rlock::proc {

namespace {

char* g_start = nullptr;
std::size_t g_size = 0;

} // namespace

void
remember_argv(int argc, char** argv) {
  if (argc < 1) {
    return;
  }
  // The arguments are laid out one after another; use the span they share.
  g_start = argv[0];
  char* end = argv[0] + std::strlen(argv[0]) + 1;
  for (int i = 1; i < argc && argv[i] == end; ++i) {
    end = argv[i] + std::strlen(argv[i]) + 1;
  }
  g_size = static_cast<std::size_t>(end - g_start);
}

void
set_process_title(std::string_view title) {
  if (g_start == nullptr || g_size == 0) {
    return;
  }
  const std::size_t length = std::min(title.size(), g_size - 1);
  std::memcpy(g_start, title.data(), length);
  std::memset(g_start + length, 0, g_size - length);
}

} // namespace rlock::proc
