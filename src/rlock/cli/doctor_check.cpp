#include <rlock/cli/doctor_check.hpp>
#include <rlock/util/integer.hpp>

#include <cmath>
#include <cstdio>

namespace rlock::cli {

std::optional<RateError>
clock_rate_error(const ServerFacts& facts) {
  if (!facts.clock_rate || facts.clock_rate->local <= Duration::zero()) {
    return std::nullopt;
  }
  const auto local = static_cast<double>(facts.clock_rate->local.count());
  const RateError rate{
      static_cast<double>(facts.clock_rate->server.count()) / local - 1,
      static_cast<double>(facts.clock_rate->uncertainty.count()) / local};
  if (rate.bound > k_clock_rate_precision) {
    return std::nullopt;
  }
  return rate;
}

namespace doctor {

CheckResult
named(std::string name) {
  CheckResult check;
  check.name = std::move(name);
  return check;
}

// Returns the value of `key` in `fields`, or nullptr.
const std::string*
find(const Fields& fields, std::string_view key) {
  const auto found = fields.find(key);
  return found == fields.end() ? nullptr : &found->second;
}

std::optional<long long>
to_integer(const std::string* text) {
  if (text == nullptr) {
    return std::nullopt;
  }
  return parse_integer(*text);
}

Json
json_or_null(const std::string* text) {
  return text == nullptr ? Json(nullptr) : Json(*text);
}

Json
json_or_null(std::optional<long long> value) {
  return value ? Json(*value) : Json(nullptr);
}

Json
error_json(const std::string& error) {
  return error.empty() ? Json(nullptr) : Json(error);
}

// Milliseconds for JSON: an integer when whole, else to the microsecond.
Json
ms_json(Duration duration) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(duration).count();
  if (micros % 1000 == 0) {
    return micros / 1000;
  }
  return static_cast<double>(micros) / 1000;
}

// "0.12ms", "6.0ms", "305ms", "1.205s": enough digits for a round trip.
std::string
format_ms(Duration duration) {
  const double ms = std::chrono::duration<double, std::milli>(duration).count();
  if (ms >= 1000) {
    return format_seconds(duration);
  }
  char text[32];
  std::snprintf(text,
                sizeof(text),
                ms < 1    ? "%.2fms"
                : ms < 10 ? "%.1fms"
                          : "%.0fms",
                ms);
  return text;
}

std::string
joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string text;
  for (const auto& part : parts) {
    text += (text.empty() ? "" : separator) + part;
  }
  return text;
}

std::string
servers_count(std::size_t count) {
  return std::to_string(count) + (count == 1 ? " server" : " servers");
}

// "2.00%" for 0.02.
std::string
percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f%%", fraction * 100);
  return text;
}

// Rounded half away from zero, as llround() does: without libm, whose
// pages every run would map for this one call.
Json
ppm_json(double fraction) {
  const double ppm = fraction * 1e6;
  return static_cast<long long>(ppm < 0 ? ppm - 0.5 : ppm + 0.5);
}

// Whether `rate` is off by more than k_max_clock_rate_error, however wrong
// the measurement.
bool
rate_off(const RateError& rate) {
  return std::abs(rate.error) > k_max_clock_rate_error + rate.bound;
}

// "127.0.0.1:6379's clock ran 2.00% fast against this host's over 250ms".
std::string
rate_text(const ServerFacts& facts, const RateError& rate) {
  return facts.address + "'s clock ran " + percent(std::abs(rate.error))
         + (rate.error > 0 ? " fast" : " slow") + " against this host's over "
         + format_ms(facts.clock_rate->local);
}

// Judges a failover that takes `detect` (Sentinel's down-after-milliseconds,
// Cluster's cluster-node-timeout: `setting`) plus an election against the
// TTL.
void
judge_failover(CheckResult& check,
               const std::string& setting,
               Duration detect,
               const lock::LeaseTiming& timing) {
  const std::string head = "a failover takes " + setting + " ("
                           + format_ms(detect)
                           + ") plus the election and promotion";
  if (detect >= timing.ttl) {
    check.status = CheckStatus::fail;
    check.message = head + ", at least the " + format_ms(timing.ttl)
                    + " TTL: every failover would stop the command (exit "
                      "70); use a longer --ttl or a lower "
                    + setting;
  } else if (detect + std::chrono::seconds(2) >= timing.ttl) {
    check.status = CheckStatus::warn;
    check.message = head + ", close to the " + format_ms(timing.ttl)
                    + " TTL: a failover may stop the command (exit 70)";
  } else {
    check.status = CheckStatus::ok;
    check.message = head + ", well within the " + format_ms(timing.ttl)
                    + " TTL: runs go on on the new master";
  }
}

} // namespace doctor

} // namespace rlock::cli
