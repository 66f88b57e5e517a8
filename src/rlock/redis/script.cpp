#include <rlock/redis/script.hpp>

namespace rlock::redis {

std::vector<std::string>
script_command(const Script& script,
               std::string_view verb,
               const std::vector<std::string>& keys,
               const std::vector<std::string>& args) {
  const auto body = verb == "EVAL" ? script.source : script.sha1;
  std::vector<std::string> command{
      std::string(verb), std::string(body), std::to_string(keys.size())};
  command.insert(command.end(), keys.begin(), keys.end());
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

bool
is_noscript(const Reply& reply) {
  return reply.is_error() && reply.text.starts_with("NOSCRIPT");
}

Reply
run_script(Connection& connection,
           const Script& script,
           const std::vector<std::string>& keys,
           const std::vector<std::string>& args) {
  auto reply =
      connection.command(script_command(script, "EVALSHA", keys, args));
  if (is_noscript(reply)) {
    reply = connection.command(script_command(script, "EVAL", keys, args));
  }
  return reply;
}

} // namespace rlock::redis
