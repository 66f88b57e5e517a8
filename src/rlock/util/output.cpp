#include <rlock/util/output.hpp>

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace rlock::output {

namespace {

// Enough for every line a long run's events produce between two reads of a
// slow consumer; beyond it, new text is dropped rather than held in memory.
constexpr std::size_t k_max_queued_bytes = 1 << 20;

struct Pending {
  int fd;
  std::string text;
};

struct Queue {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Pending> items;
  std::size_t bytes = 0;
  std::size_t dropped = 0;
  bool deferred = false;
  bool stopping = false;
  std::thread writer;
};

Queue g_queue;

void
write_whole(int fd, const std::string& text) {
  std::size_t written = 0;
  while (written < text.size()) {
    const auto n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;
    }
    written += static_cast<std::size_t>(n);
  }
}

void
drain() {
  std::unique_lock lock(g_queue.mutex);
  while (true) {
    g_queue.ready.wait(
        lock, [] { return g_queue.stopping || !g_queue.items.empty(); });
    if (g_queue.items.empty()) {
      return; // stopping, and everything is written
    }
    Pending next = std::move(g_queue.items.front());
    g_queue.items.pop_front();
    g_queue.bytes -= next.text.size();
    lock.unlock();
    write_whole(next.fd, next.text);
    lock.lock();
  }
}

} // namespace

void
write(int fd, std::string text) {
  {
    std::lock_guard lock(g_queue.mutex);
    if (g_queue.deferred) {
      if (g_queue.bytes + text.size() > k_max_queued_bytes) {
        ++g_queue.dropped;
      } else {
        g_queue.bytes += text.size();
        g_queue.items.push_back({fd, std::move(text)});
        // Started at the first line: a quiet run (most of them) never pays
        // for a thread.
        if (!g_queue.writer.joinable()) {
          g_queue.writer = std::thread(drain);
        }
        g_queue.ready.notify_one();
      }
      return;
    }
  }
  write_whole(fd, text);
}

Deferred::Deferred() {
  std::lock_guard lock(g_queue.mutex);
  g_queue.deferred = true;
  g_queue.stopping = false;
}

Deferred::~Deferred() {
  {
    std::lock_guard lock(g_queue.mutex);
    g_queue.stopping = true;
    g_queue.ready.notify_one();
  }
  if (g_queue.writer.joinable()) {
    g_queue.writer.join();
  }
  std::size_t dropped = 0;
  {
    std::lock_guard lock(g_queue.mutex);
    g_queue.deferred = false;
    dropped = std::exchange(g_queue.dropped, 0);
  }
  if (dropped > 0) {
    write_whole(STDERR_FILENO,
                "rlock: warning: " + std::to_string(dropped)
                    + " lines of output were dropped: stderr or the events "
                      "file was not being read\n");
  }
}

} // namespace rlock::output
