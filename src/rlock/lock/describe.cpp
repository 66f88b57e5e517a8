#include <rlock/lock/describe.hpp>
#include <rlock/util/text.hpp>

namespace rlock::lock {

namespace {

std::string
held_by(bool shared,
        const std::string& holder,
        const std::string& command,
        std::int64_t holders) {
  std::string text = shared ? "held shared by " : "held by ";
  text += printable(holder);
  if (!command.empty()) {
    text += " (" + printable(command) + ")";
  }
  if (holders > 1) {
    text += " and " + std::to_string(holders - 1) + " more";
  }
  return text;
}

} // namespace

std::string
held_by_text(const Busy& busy, bool with_command) {
  return held_by(busy.shared_holders,
                 busy.holder,
                 with_command ? busy.command : std::string(),
                 busy.holders);
}

std::string
held_by_text(const BrokenLock& broken) {
  return held_by(broken.shared, broken.holder, broken.command, broken.holders);
}

std::string
queued_first_text(const Busy& busy, bool shared_request) {
  return shared_request && busy.shared_holders
             ? "; a waiter queued earlier goes first"
             : "";
}

} // namespace rlock::lock
