#pragma once

#include <rlock/util/error.hpp>

#include <optional>
#include <string>
#include <utility>

namespace rlock {

// A value or the reason there is none: what pure parsers return, so that they
// do no I/O and the caller decides how to report (C++20 has no std::expected).
template <typename T>
class Expected {
public:
  Expected(T value) : m_value(std::move(value)) {
  }

  static Expected
  failure(std::string reason) {
    Expected result;
    result.m_error = std::move(reason);
    return result;
  }

  explicit operator bool() const {
    return m_value.has_value();
  }

  const T&
  value() const {
    return *m_value;
  }

  const std::string&
  error() const {
    return m_error;
  }

private:
  Expected() = default;

  std::optional<T> m_value;
  std::string m_error;
};

// Returns the value, or throws a usage error "<option>: <reason>".
template <typename T>
T
value_or_usage_error(const Expected<T>& result, const std::string& option) {
  if (!result) {
    throw Error(ErrorKind::bad_input, option + ": " + result.error());
  }
  return result.value();
}

} // namespace rlock
