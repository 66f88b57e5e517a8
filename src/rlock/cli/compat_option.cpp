// --compat STYLE: which layout the lock is kept in, and what each style
// cannot serve (docs/sharing.md).

#include <rlock/cli/raw_options.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>

#include <string>
#include <string_view>

namespace rlock::cli::detail {

namespace {

constexpr std::string_view k_styles = "string, shedlock[:ENV] or redisson";

// Returns the style `text` names; throws a usage error for another.
lock::Compat
parse_compat(const std::string& text) {
  lock::Compat compat;
  const auto colon = text.find(':');
  const std::string style = text.substr(0, colon);
  if (style == "string") {
    compat.style = lock::LockStyle::string;
  } else if (style == "shedlock") {
    compat.style = lock::LockStyle::shedlock;
  } else if (style == "redisson") {
    compat.style = lock::LockStyle::redisson;
  } else {
    throw_usage("--compat: unknown style " + quote(text) + " (expected "
                + std::string(k_styles) + ")");
  }
  if (colon == std::string::npos) {
    return compat;
  }
  const std::string env = text.substr(colon + 1);
  if (compat.style != lock::LockStyle::shedlock) {
    throw_usage("--compat: " + style + " takes no ':' part, got "
                + quote(text));
  }
  if (env.empty()) {
    throw_usage("--compat: shedlock:ENV needs an ENV after ':', got "
                + quote(text));
  }
  compat.shedlock_env = env;
  return compat;
}

// Throws a usage error naming `option` when it is given with --compat
// `text`: the library's layout has no room for it.
void
refuse_with(bool given,
            const std::string& option,
            const std::string& text,
            const std::string& why) {
  if (given) {
    throw_usage("--compat " + text + ": not with " + option + ": " + why);
  }
}

} // namespace

lock::Compat
compat_of(const RawOptions& raw, const lock::Deployment& server) {
  if (!raw.compat) {
    return {};
  }
  const std::string& text = *raw.compat;
  auto compat = parse_compat(text);
  const std::string one_holder =
      "the application's lock has one holder at a time";
  refuse_with(raw.run.limit.has_value() || raw.acquire.limit.has_value(),
              "--limit",
              text,
              one_holder);
  refuse_with(
      raw.run.shared || raw.acquire.shared, "--shared", text, one_holder);
  refuse_with(raw.fair,
              "--fair",
              text,
              "the application's library keeps no queue, so no order is "
              "common to both");
  refuse_with(raw.run.once_per.has_value(),
              "--once-per",
              text,
              "the application's library keeps no record of runs");
  // The string style is kept on a quorum as redsync and node-redlock keep
  // it; the others' libraries keep their lock on one server.
  refuse_with(std::holds_alternative<lock::Quorum>(server.topology)
                  && compat.style != lock::LockStyle::string,
              "several --url",
              text,
              "ShedLock and Redisson keep their lock on one server (Redisson's "
              "RedLock is deprecated); name one server, a Sentinel master or "
              "a Cluster, or use --compat string for a quorum");
  return compat;
}

lock::Compat
step_compat_of(const RawOptions& raw,
               const lock::Deployment& server,
               const std::string& name,
               const Environment& environment) {
  if (raw.compat || !environment.rlock_compat
      || environment.rlock_compat->empty() || environment.rlock_name != name) {
    return server.compat;
  }
  RawOptions from_environment = raw;
  from_environment.compat = environment.rlock_compat;
  return compat_of(from_environment, server);
}

std::string
compat_text(const lock::Compat& compat) {
  switch (compat.style) {
  case lock::LockStyle::rlock:
    break;
  case lock::LockStyle::string:
    return "string";
  case lock::LockStyle::shedlock:
    return "shedlock:" + compat.shedlock_env;
  case lock::LockStyle::redisson:
    return "redisson";
  }
  return "";
}

} // namespace rlock::cli::detail
