#pragma once

#include <string>

namespace rlock::output {

// Writes `text` whole to `fd` (one write(2) where the kernel takes it all, so
// lines from two threads never interleave); a write error is ignored. While
// a Deferred lives, queues the text instead and returns at once.
void write(int fd, std::string text);

// While an object of this class lives, write() never blocks its caller: a
// thread of its own writes the queued text in order. A reader that stops
// reading (a paused terminal, a full pipe, a hung file system) then delays
// only that thread, never the renewals or the kill path (the thread starts
// with the first queued line, so a quiet run has none). Past a bound the
// queue drops new text and counts it. The destructor writes what is queued
// (blocking, as any program's last output does) and a line counting what
// was dropped.
class Deferred {
public:
  Deferred();
  ~Deferred();

  Deferred(const Deferred&) = delete;
  Deferred& operator=(const Deferred&) = delete;
};

} // namespace rlock::output
