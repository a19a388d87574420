#include "sim/cli/option_errors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sstream>
#include <vector>

#include "sim/core/error.hpp"

namespace aggsim::cli {

namespace {

std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

// CLI11 2.1 words its messages in a few shapes; each becomes "what: message".
std::string option_error(const CLI::ParseError& error, const std::vector<std::string>& args) {
  std::string message = error.what();
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  if (message == "A subcommand is required") {
    const std::vector<std::string> commands = {"run",       "validate", "list", "sweep",
                                               "calibrate", "compare",  "perf", "bench"};
    const std::vector<std::string> verbs = {"expand", "run", "slurm", "merge"};
    const bool sweep = !args.empty() && args.front() == "sweep";
    const auto& known = sweep ? verbs : commands;
    const std::string given = args.size() > (sweep ? 1u : 0u) ? args[sweep ? 1 : 0] : "";
    const std::string list = fmt::format("{}", fmt::join(known, ", "));
    if (!given.empty() && !starts_with(given, "-"))
      return printable(fmt::format("{}{}: not {} ({})", sweep ? "sweep " : "", given,
                                   sweep ? "a sweep verb" : "an aggsim command", list));
    return fmt::format("{} is required: {}", sweep ? "a sweep verb" : "a command", list);
  }
  for (const std::string lead :
       {"The following argument was not expected: ", "The following arguments were not expected: "})
    if (starts_with(message, lead)) {
      const auto extra = words_of(message.substr(lead.size()));
      const std::string first = extra.empty() ? "?" : extra.front();
      return printable(fmt::format("{}: not an option or argument of this command{}", first,
                                   first.rfind('-', 0) == 0 ? " (see --help for its options)" : ""));
    }
  const std::string required = " is required";
  if (message.size() > required.size() &&
      message.compare(message.size() - required.size(), required.size(), required) == 0 &&
      message.find(' ') == message.size() - required.size())
    return printable(fmt::format("{}: is required", message.substr(0, message.size() - required.size())));
  // "--chunk: Value 0 not in range ...", "--progress excludes --no-progress": the option leads.
  if (starts_with(message, "-")) {
    const auto end = message.find_first_of(": ");
    const std::string option = message.substr(0, end);
    std::string rest = end == std::string::npos ? "" : message.substr(end);
    while (!rest.empty() && (rest.front() == ':' || rest.front() == ' ')) rest.erase(rest.begin());
    return printable(fmt::format("{}: {}", option, rest.empty() ? "invalid" : rest));
  }
  // Elsewhere the first word naming an option ("Could not convert: --ranks = x").
  for (const auto& word : words_of(message))
    if (starts_with(word, "--") && word.size() > 2) {
      std::string option = word;
      while (!option.empty() && (option.back() == ':' || option.back() == ',')) option.pop_back();
      return printable(fmt::format("{}: {}", option, message));
    }
  return printable(message);
}

std::string empty_option_value(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* at = &app;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!starts_with(a, "-")) {
      const auto named = at->get_subcommands([&](CLI::App* sub) { return sub->check_name(a); });
      if (!named.empty()) at = named.front();
      continue;
    }
    const auto eq = a.find('=');
    const bool inline_value = starts_with(a, "--") && eq != std::string::npos;
    const std::string name = inline_value ? a.substr(0, eq) : a;
    const CLI::Option* option = at->get_option_no_throw(name);
    if (option == nullptr || option->get_expected_max() == 0) continue;  // unknown, or a flag
    const bool empty = inline_value ? eq + 1 == a.size() : i + 1 < args.size() && args[i + 1].empty();
    if (empty)
      return fmt::format("{}: the value is empty (give {} a value, or leave the option out)", name, name);
  }
  return "";
}

std::string empty_positional(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands()) {
    for (const CLI::Option* option : sub->get_options()) {
      if (option->nonpositional() || option->count() == 0) continue;
      for (const std::string& value : option->results())
        if (value.empty())
          return fmt::format("{}: the value is empty: give a file's name", option->get_name());
    }
    if (std::string inner = empty_positional(*sub); !inner.empty()) return inner;
  }
  return "";
}

}  // namespace aggsim::cli
