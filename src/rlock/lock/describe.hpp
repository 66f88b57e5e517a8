#pragma once

#include <rlock/lock/lease.hpp>

#include <string>

// The words for a store's answers, shared by the commands that report them
// (run, acquire, release, the waiter's log lines): who holds a lock, and why
// a request waits.
namespace rlock::lock {

// Says who holds the lock an attempt did not get (or a look found held): "held
// by user@host:pid", with its command in parentheses when `with_command`; for a
// semaphore or a shared lock "held [shared] by ... and 2 more" (the holder
// whose lease ends first).
std::string held_by_text(const Busy& busy, bool with_command);

// The same for the holders of a lock that was broken (release --force).
std::string held_by_text(const BrokenLock& broken);

// For a `shared_request` that shared holders kept out, the reason is a
// waiter queued earlier (a plain one, writers first): "; a waiter queued
// earlier goes first". "" otherwise.
std::string queued_first_text(const Busy& busy, bool shared_request);

} // namespace rlock::lock
