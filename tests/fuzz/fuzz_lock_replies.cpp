// The lock protocol's reply decoders (store/replies.hpp, the status views and
// redis/subscription.hpp's) on the replies ReplyReader parses from the
// fuzzer's bytes, in memory: the bytes are what a server answered, in order,
// to the commands of one protocol step. The first byte picks the step. Error
// is the expected way to fail; anything else is a finding.
#include <rlock/cli/status_view.hpp>
#include <rlock/lock/describe.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/redis/reply_reader.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/store/keys.hpp>
#include <rlock/store/replies.hpp>
#include <rlock/util/error.hpp>

#include "fuzz.hpp"
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

using namespace rlock;

namespace {

// The replies of one step, handed out in order. Running out is what a
// closed connection would be: an Error.
class ReplyQueue {
public:
  explicit ReplyQueue(std::vector<redis::Reply> replies)
      : m_replies(std::move(replies)) {
  }

  const redis::Reply&
  next() {
    if (m_next == m_replies.size()) {
      throw redis::Failure(redis::FailureKind::closed, "fuzz: no more replies");
    }
    return m_replies[m_next++];
  }

  // The reply to a script, as redis::run_script() takes it: after NOSCRIPT,
  // the reply to the EVAL it sends then.
  const redis::Reply&
  next_script_reply() {
    const auto& reply = next();
    if (reply.is_error() && reply.text.starts_with("NOSCRIPT")) {
      return next();
    }
    return reply;
  }

private:
  std::vector<redis::Reply> m_replies;
  std::size_t m_next = 0;
};

const auto k_keys = lock::keys_for("rlock:", "fuzz");
const std::string k_what = "cannot do it to lock 'fuzz'";

// Calls `step`, which may throw only Error, with a one-line message that
// starts with `what` when one is given.
template <typename Step>
void
expect_error_only(Step&& step, const std::string& what = {}) {
  try {
    step();
  } catch (const Error& e) {
    const std::string message = e.what();
    if (!fuzz::is_one_line(message)) {
      fuzz::finding("an error message is not one line", message);
    }
    if (!what.empty() && !message.starts_with(what + ": ")
        && !message.starts_with("fuzz: ")) {
      fuzz::finding("an error message does not say what failed", message);
    }
  }
}

// An answer's type says its case (a grant carries no holder); who holds a
// busy lock, worded as the commands word it, stays on one line whatever the
// server sent.
template <class Answer>
void
check_answer(const Answer& answer) {
  if (const auto* busy = std::get_if<lock::Busy>(&answer)) {
    const auto text = lock::held_by_text(*busy, true);
    if (!fuzz::is_one_line(text)) {
      fuzz::finding("a holder's description is not one line", text);
    }
  }
}

void
show(const lock::StatusSnapshot& snapshot) {
  (void)cli::format_status_table(snapshot, 80);
  (void)cli::format_status_json(snapshot);
}

// As store/status.cpp reads `names`: TIME, then per lock HGETALL, PTTL,
// ZCOUNT and a semaphore's holders (ZRANGE WITHSCORES); in a listing, a key
// that is not a lock is skipped.
lock::StatusSnapshot
read_states(ReplyQueue& replies,
            const std::vector<std::string>& names,
            bool listing) {
  lock::StatusSnapshot snapshot;
  snapshot.server_now_ms = lock::decode_server_time(replies.next());
  for (const auto& name : names) {
    lock::LockState state;
    state.name = name;
    state.key = lock::keys_for("rlock:", name).lock;
    const auto& hash = replies.next();
    const auto& pttl = replies.next();
    const auto& waiters = replies.next();
    const auto& holders = replies.next();
    if (!(listing && hash.is_error())) {
      lock::decode_lock_state(
          state, hash, pttl, holders, snapshot.server_now_ms);
    }
    state.waiters = lock::decode_waiters(waiters, state.key);
    snapshot.locks.push_back(std::move(state));
  }
  return snapshot;
}

// As store/status.cpp lists locks: SCAN pages until the cursor is "0".
void
list_locks(ReplyQueue& replies) {
  std::vector<std::string> names;
  std::string cursor;
  do {
    auto page = lock::decode_scan(replies.next(), lock::KeySpace{"rlock:"});
    cursor = std::move(page.cursor);
    names.insert(names.end(), page.names.begin(), page.names.end());
  } while (cursor != "0");
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  auto snapshot = read_states(replies, names, true);
  std::erase_if(snapshot.locks,
                [](const lock::LockState& state) { return !state.held; });
  show(snapshot);
}

// As redis::Subscription reads: a confirmation per channel, then messages.
void
subscribe(ReplyQueue& replies) {
  redis::check_subscribed(replies.next(), "fuzz");
  redis::check_subscribed(replies.next(), "fuzz");
  for (;;) {
    (void)redis::is_message(replies.next());
  }
}

using Step = std::function<void(ReplyQueue&)>;

// Each decodes the replies to one protocol step, in the order the first
// byte of the seeds in corpus/lock_replies/ picks them.
const std::vector<Step>&
steps() {
  static const std::vector<Step> all{
      [](auto& r) {
        expect_error_only(
            [&] {
              check_answer(lock::decode_acquire(r.next_script_reply(), k_what));
            },
            k_what);
      },
      [](auto& r) {
        expect_error_only(
            [&] {
              check_answer(lock::decode_peek(r.next_script_reply(), k_what));
            },
            k_what);
      },
      [](auto& r) {
        expect_error_only(
            [&] { (void)lock::decode_renew(r.next_script_reply(), k_what); },
            k_what);
      },
      [](auto& r) {
        expect_error_only(
            [&] { (void)lock::decode_yes_no(r.next_script_reply(), k_what); },
            k_what);
      },
      [](auto& r) {
        expect_error_only([&] { (void)lock::decode_pttl(r.next(), k_what); },
                          k_what);
      },
      [](auto& r) {
        expect_error_only(
            [&] { (void)lock::decode_check(r.next_script_reply(), k_what); },
            k_what);
      },
      [](auto& r) {
        expect_error_only(
            [&] {
              (void)lock::decode_force_release(r.next_script_reply(), k_what);
            },
            k_what);
      },
      [](auto& r) {
        expect_error_only(
            [&] { (void)lock::decode_slot(r.next_script_reply(), k_what); },
            k_what);
      },
      [](auto& r) {
        expect_error_only([&] { show(read_states(r, {"a", "b"}, false)); });
      },
      [](auto& r) { expect_error_only([&] { list_locks(r); }); },
      [](auto& r) { expect_error_only([&] { subscribe(r); }); },
  };
  return all;
}

// Every complete reply in `bytes`, up to a protocol error.
std::vector<redis::Reply>
parse(std::string_view bytes) {
  std::vector<redis::Reply> replies;
  redis::ReplyReader reader;
  try {
    reader.feed(bytes);
    while (auto reply = reader.next()) {
      replies.push_back(std::move(*reply));
    }
  } catch (const redis::ProtocolError&) {
    // Bytes that are not the protocol end the replies, as they would end a
    // connection.
  }
  return replies;
}

} // namespace

// hiredis 0.14 allocates a multi-bulk reply's array as soon as it reads the
// count, with no limit: "*1700000000\r\n" asks for 13.6 GB. ReplyLimits
// refuses such a reply before hiredis reads it, so any allocation above
// 256 MB is a finding (ASan reports it) rather than an "Out of memory".
extern "C" const char*
__asan_default_options() {
  return "max_allocation_size_mb=256";
}

extern "C" int
LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const auto& all = steps();
  const auto& step = all[data[0] % all.size()];
  ReplyQueue replies(parse(
      std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1)));
  step(replies);
  return 0;
}
