#include <rlock/cli/status_view.hpp>
#include <rlock/util/clock.hpp>
#include <rlock/util/duration.hpp>
#include <rlock/util/text.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

namespace rlock::cli {

namespace {

constexpr std::size_t k_columns = 6;
using Row = std::array<std::string, k_columns>;

constexpr std::size_t k_name_max = 24;
constexpr std::size_t k_holder_max = 28;

std::string
ttl_text(const lock::LockState& state) {
  return state.ttl_ms < 0
             ? "none"
             : format_duration(std::chrono::milliseconds(state.ttl_ms));
}

Row
row_of(const lock::LockState& state, std::int64_t now_ms) {
  if (!state.held) {
    return {
        truncate_columns(state.name, k_name_max), "-", "-", "-", "-", "(free)"};
  }
  const auto held_for = std::chrono::milliseconds(
      std::max<std::int64_t>(now_ms - state.acquired_ms, 0));
  return {truncate_columns(state.name, k_name_max),
          truncate_columns(state.user + "@" + state.host + ":"
                               + std::to_string(state.pid),
                           k_holder_max),
          format_duration(held_for),
          ttl_text(state),
          std::to_string(state.fence),
          state.command};
}

std::string
pad(const std::string& text, std::size_t width) {
  const auto used = column_width(text);
  return text + std::string(width > used ? width - used : 0, ' ');
}

} // namespace

std::string
format_status_table(const lock::StatusSnapshot& snapshot, std::size_t width) {
  std::vector<Row> rows{
      {"NAME", "HOLDER", "HELD FOR", "TTL", "FENCE", "COMMAND"}};
  for (const auto& state : snapshot.locks) {
    rows.push_back(row_of(state, snapshot.server_now_ms));
  }
  std::array<std::size_t, k_columns> widths{};
  for (const auto& row : rows) {
    for (std::size_t i = 0; i + 1 < k_columns; ++i) {
      widths[i] = std::max(widths[i], column_width(row[i]));
    }
  }
  std::size_t used = 0;
  for (std::size_t i = 0; i + 1 < k_columns; ++i) {
    used += widths[i] + 2;
  }
  const std::size_t command_width = width > used + 10 ? width - used : 10;
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i + 1 < k_columns; ++i) {
      line += pad(row[i], widths[i] + 2);
    }
    line += truncate_columns(row.back(), command_width);
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
    out += line + "\n";
  }
  return out;
}

std::string
format_status_json(const lock::StatusSnapshot& snapshot) {
  auto locks = nlohmann::ordered_json::array();
  for (const auto& state : snapshot.locks) {
    nlohmann::ordered_json entry{
        {"name", state.name}, {"key", state.key}, {"held", state.held}};
    if (state.held) {
      entry["ttl_ms"] = state.ttl_ms < 0 ? nlohmann::ordered_json(nullptr)
                                         : nlohmann::ordered_json(state.ttl_ms);
      entry["token"] = state.token;
      entry["fence"] = state.fence;
      entry["owner"] = {
          {"host", state.host}, {"pid", state.pid}, {"user", state.user}};
      entry["command"] = state.command;
      entry["acquired_at"] = format_iso8601_utc(state.acquired_ms);
    } else {
      for (const char* field :
           {"ttl_ms", "token", "fence", "owner", "command", "acquired_at"}) {
        entry[field] = nullptr;
      }
    }
    locks.push_back(std::move(entry));
  }
  // Replace invalid UTF-8 rather than throw: names and commands are bytes.
  return locks.dump(
             2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
         + "\n";
}

} // namespace rlock::cli
