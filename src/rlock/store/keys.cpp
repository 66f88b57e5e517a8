#include <rlock/redis/cluster.hpp>
#include <rlock/store/keys.hpp>
#include <rlock/util/text.hpp>

#include <fnmatch.h>

namespace rlock::lock {

namespace {

// Backslash-escapes the characters that SCAN MATCH treats as glob syntax.
std::string
escape_glob(std::string_view text) {
  std::string result;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
      result += '\\';
    }
    result += c;
  }
  return result;
}

} // namespace

LockKeys
keys_for(const KeySpace& space, std::string_view name) {
  const std::string tag =
      space.cluster ? redis::cluster_safe_tag(name) : std::string(name);
  const std::string lock = space.prefix + "{" + tag + "}";
  return LockKeys{std::string(name),
                  lock,
                  lock + ":fence",
                  lock + ":queue",
                  lock + ":alive",
                  lock + ":once",
                  lock + ":holders",
                  lock + ":"};
}

std::string
name_of_lock_key(const KeySpace& space, std::string_view key) {
  const auto& prefix = space.prefix;
  const bool is_lock = key.size() >= prefix.size() + 2
                       && key.starts_with(prefix) && key[prefix.size()] == '{'
                       && key.ends_with('}');
  if (!is_lock) {
    return {};
  }
  const auto tag =
      key.substr(prefix.size() + 1, key.size() - prefix.size() - 2);
  if (!space.cluster) {
    return std::string(tag);
  }
  return redis::name_of_cluster_tag(tag).value_or("");
}

std::string
lock_key_pattern(const KeySpace& space, std::string_view match) {
  return escape_glob(space.prefix) + "{"
         + std::string(space.cluster ? "*" : match) + "}";
}

bool
name_matches(std::string_view match, std::string_view name) {
  return fnmatch(std::string(match).c_str(), std::string(name).c_str(), 0) == 0;
}

Expected<std::string>
validate_name(std::string_view name) {
  using Result = Expected<std::string>;
  if (name.empty()) {
    return Result::failure("invalid lock name '': must not be empty");
  }
  if (name.size() > k_max_name_bytes) {
    return Result::failure(
        "invalid lock name " + quote(std::string(name.substr(0, 32)) + "...")
        + ": " + std::to_string(name.size()) + " bytes long, at most "
        + std::to_string(k_max_name_bytes) + " allowed");
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7F) {
      return Result::failure("invalid lock name " + quote(name)
                             + ": control characters are not allowed");
    }
  }
  return std::string(name);
}

} // namespace rlock::lock
