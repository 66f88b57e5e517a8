#include <rlock/redis/script.hpp>

namespace rlock::redis {

namespace {

std::vector<std::string>
eval_args(std::string_view verb,
          std::string_view body,
          const std::vector<std::string>& keys,
          const std::vector<std::string>& args) {
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

} // namespace

Reply
run_script(Connection& connection,
           const Script& script,
           const std::vector<std::string>& keys,
           const std::vector<std::string>& args) {
  auto reply =
      connection.command(eval_args("EVALSHA", script.sha1, keys, args));
  if (is_noscript(reply)) {
    reply = connection.command(eval_args("EVAL", script.source, keys, args));
  }
  return reply;
}

} // namespace rlock::redis
