#include <rlock/lock/restart_grace.hpp>
#include <rlock/lock/server_facts.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/events.hpp>
#include <rlock/util/integer.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>

namespace rlock::lock {

namespace {

using std::chrono::seconds;

[[noreturn]] void
unknown_start(const std::string& address,
              const std::string& why,
              const RestartGrace& grace) {
  throw unknown_start_failure(address, why, grace);
}

// "3s", "27s", "2m10s": whole seconds, as INFO counts them.
std::string
format_whole_seconds(seconds duration) {
  return duration < std::chrono::minutes(1)
             ? std::to_string(duration.count()) + "s"
             : format_duration(duration);
}

// "30s", "1h00m", "1.5s": the grace as a person would give it.
std::string
format_grace(Duration grace) {
  const auto whole = std::chrono::floor<seconds>(grace);
  return whole == grace ? format_whole_seconds(whole) : format_duration(grace);
}

// Returns the start that counts for the grace from the replies to INFO
// server and INFO replication set aside on `connection`: the latest start
// the uptime allows, or, for a server that holds a synced copy, a start a
// whole grace ago (it lost nothing when it started).
BootTime
start_from_info(redis::Connection& connection, const RestartGrace& grace) {
  const auto server = connection.take_aside_reply();
  const auto replication = connection.take_aside_reply();
  const BootTime received = boot_now();
  const auto address = connection.address();
  if (!server) {
    unknown_start(address, "no reply to INFO", grace);
  }
  if (server->is_error()) {
    unknown_start(address, "INFO refused: " + printable(server->text), grace);
  }
  if (!server->is_string()) {
    unknown_start(address, "unexpected reply to INFO", grace);
  }
  const auto uptime = uptime_of(server->text);
  if (!uptime) {
    unknown_start(address, "INFO has no uptime_in_seconds", grace);
  }
  // -v names the server as it names itself (Valkey: server_name and
  // valkey_version, not the redis_version it pins at 7.2.4).
  log::info("the server at " + address + " is "
            + server_label(identify_server(parse_info(server->text))) + ", up "
            + format_whole_seconds(seconds(*uptime)));
  const BootTime started = latest_start(*uptime, received);
  if (started + grace.length <= received || !replication
      || !replication->is_string() || !holds_synced_copy(replication->text)) {
    return started;
  }
  log::info("the Redis server at " + address + " started "
            + format_whole_seconds(seconds(*uptime))
            + " ago but holds a copy synced from its former master: not held "
              "back ("
            + grace.name + ")");
  return received - grace.length;
}

// Returns the value of `name` in `fields` as an integer, or nothing.
std::optional<std::int64_t>
integer_field(const Fields& fields, std::string_view name) {
  const auto it = fields.find(name);
  if (it == fields.end()) {
    return std::nullopt;
  }
  return parse_integer(it->second);
}

// True when `id` is a replication ID that is set: 40 hex digits, not all 0.
bool
set_replication_id(std::string_view id) {
  return id.size() == 40
         && id.find_first_not_of("0123456789abcdef") == std::string_view::npos
         && id.find_first_not_of('0') != std::string_view::npos;
}

} // namespace

std::optional<std::int64_t>
uptime_of(std::string_view info) {
  constexpr std::string_view k_field = "uptime_in_seconds:";
  std::size_t at = 0;
  while ((at = info.find(k_field, at)) != std::string_view::npos) {
    if (at == 0 || info[at - 1] == '\n') {
      auto value = info.substr(at + k_field.size());
      value = value.substr(0, value.find_first_of("\r\n"));
      return parse_integer(value, 0);
    }
    at += k_field.size();
  }
  return std::nullopt;
}

bool
holds_synced_copy(std::string_view replication) {
  return holds_synced_copy(parse_info(replication));
}

bool
holds_synced_copy(const Fields& fields) {
  const auto text = [&fields](std::string_view name) -> std::string_view {
    const auto it = fields.find(name);
    return it == fields.end() ? std::string_view() : it->second;
  };
  if (text("role") != "master" || !set_replication_id(text("master_replid2"))
      || text("repl_backlog_active") != "1") {
    return false;
  }
  const auto promoted_at = integer_field(fields, "second_repl_offset");
  const auto copied_at =
      integer_field(fields, "repl_backlog_first_byte_offset");
  return promoted_at && copied_at && *copied_at >= 1
         && *promoted_at > *copied_at;
}

BootTime
latest_start(std::int64_t uptime_seconds, BootTime received) {
  // Redis counts whole seconds of its wall clock from a start time cut to
  // whole seconds too: more than uptime - 1 seconds have passed, not always
  // uptime. The reply left after that count was taken, so `received` only
  // makes the start later.
  const auto surely_up = std::max<std::int64_t>(uptime_seconds - 1, 0);
  return received - seconds(surely_up);
}

std::optional<Busy>
held_back(const std::string& address,
          BootTime started,
          const RestartGrace& grace,
          BootTime now) {
  const Duration left = started + grace.length - now;
  if (left <= Duration::zero()) {
    return std::nullopt;
  }
  const auto up =
      std::chrono::floor<seconds>(std::max(now - started, Duration::zero()));
  const auto left_ms = std::chrono::ceil<std::chrono::milliseconds>(left);
  Busy busy;
  busy.retry_ms = left_ms.count();
  busy.held_back = "the Redis server at " + address + " started "
                   + format_whole_seconds(up)
                   + " ago; no lock is granted for another "
                   + format_whole_seconds(std::chrono::ceil<seconds>(left))
                   + " (" + grace.name + " " + format_grace(grace.length)
                   + ": a holder from before a restart may still run)";
  return busy;
}

namespace {

bool
took_lock(const AcquireAttempt& attempt) {
  return std::holds_alternative<Granted>(attempt);
}

bool
took_lock(const PeekResult&) {
  return false;
}

// attempt_after_grace() for an acquire (Answer: AcquireAttempt) or a look
// (PeekResult, no undo).
template <class Answer>
Answer
after_grace(redis::Connection& connection,
            const std::string& name,
            const RestartGrace& grace,
            const std::function<Answer()>& attempt,
            const std::function<void()>& undo) {
  if (grace.length <= Duration::zero()) {
    return attempt();
  }
  if (const auto started = connection.server_started()) {
    if (auto busy =
            held_back(connection.address(), *started, grace, boot_now())) {
      return *busy;
    }
    return attempt();
  }
  connection.append_aside({"INFO", "server"});
  connection.append_aside({"INFO", "replication"});
  Answer result = attempt();
  std::optional<Busy> busy;
  try {
    const BootTime started = start_from_info(connection, grace);
    connection.set_server_started(started);
    busy = held_back(connection.address(), started, grace, boot_now());
  } catch (const Error&) {
    if (took_lock(result) && undo) {
      undo();
    }
    throw;
  }
  if (!busy) {
    return result;
  }
  // Granted by a server that may not know of a lease still running: give
  // it back before anyone relies on it.
  if (took_lock(result) && undo) {
    undo();
  }
  events::emit("busy",
               name,
               {{"reason", busy->held_back}, {"retry_ms", busy->retry_ms}});
  return *busy;
}

} // namespace

AcquireAttempt
attempt_after_grace(redis::Connection& connection,
                    const std::string& name,
                    const RestartGrace& grace,
                    const std::function<AcquireAttempt()>& attempt,
                    const std::function<void()>& undo) {
  return after_grace(connection, name, grace, attempt, undo);
}

PeekResult
look_after_grace(redis::Connection& connection,
                 const std::string& name,
                 const RestartGrace& grace,
                 const std::function<PeekResult()>& look) {
  return after_grace(connection, name, grace, look, {});
}

redis::Failure
unknown_start_failure(const std::string& address,
                      const std::string& why,
                      const RestartGrace& grace) {
  return redis::Failure(redis::FailureKind::unexpected_reply,
                        "cannot tell when the Redis server at " + address
                            + " started (" + why + "); allow INFO or set "
                            + grace.name + " 0");
}

} // namespace rlock::lock
