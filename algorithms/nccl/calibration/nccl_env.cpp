#include "algorithms/nccl/calibration/nccl_env.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "algorithms/nccl/calibration/nccl_info_lines.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/log_words.hpp"
#include "sim/core/strings.hpp"

namespace aggsim {

namespace {

// NCCL's variables; nccl-tests' own (NCCL_TESTS_*) are not NCCL's.
bool setting_name(const std::string& word) {
  return word.size() > 5 && word.compare(0, 5, "NCCL_") == 0 && word.compare(0, 11, "NCCL_TESTS_") != 0 &&
         std::all_of(word.begin(), word.end(), [](char c) {
           return std::isupper(static_cast<unsigned char>(c)) ||
                  std::isdigit(static_cast<unsigned char>(c)) || c == '_';
         });
}

std::string unquoted(std::string value) {
  while (!value.empty() && (value.back() == ';' || value.back() == '\\')) value.pop_back();
  // A quoted value with a space ('NCCL_NET=AWS Libfabric') is cut at the space: drop either quote.
  if (!value.empty() && (value.front() == '"' || value.front() == '\'')) value.erase(0, 1);
  if (!value.empty() && (value.back() == '"' || value.back() == '\'')) value.pop_back();
  return value;
}

// Which of `menu` an NCCL_ALGO / NCCL_PROTO value leaves `collective`, as NCCL's parseList reads it;
// `why` says what could not be read. `spell` maps NCCL's names onto the menu's.
std::set<std::string> enabled_by(const std::string& value, const std::string& collective,
                                 const std::vector<std::string>& menu,
                                 std::string (*spell)(const std::string&), std::string& why) {
  std::string list;
  bool generic_seen = false, own_seen = false;
  for (const std::string& part : split_list(value, ';')) {
    if (part.empty()) continue;
    const auto colon = part.find(':');
    if (colon == std::string::npos) {
      if (!own_seen) list = part;
      generic_seen = true;
    } else if (canonical_collective(part.substr(0, colon)) == collective) {
      list = part.substr(colon + 1);
      own_seen = true;
    }
  }
  std::set<std::string> all(menu.begin(), menu.end());
  if (!generic_seen && !own_seen) return all;  // parts for other collectives only
  const bool disable = !list.empty() && list[0] == '^';
  if (disable) list.erase(0, 1);
  std::set<std::string> named;
  for (const std::string& name : split_list(list, ',')) {
    if (name.empty()) continue;
    const std::string spelt = spell(name);
    if (spelt.empty()) {
      why = fmt::format("'{}' names nothing NCCL knows", readers::shown_word(name));
      return all;
    }
    named.insert(spelt);
  }
  std::set<std::string> enabled;
  for (const std::string& m : menu)
    if (disable != (named.count(m) > 0)) enabled.insert(m);
  return enabled;
}

// Settings that do not change what NCCL runs (its debug output).
bool without_effect(const std::string& name) {
  return name.compare(0, 10, "NCCL_DEBUG") == 0;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> nccl_settings_in_command(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> found;
  const std::vector<std::string> words = readers::split_words(line);
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string word = words[i];
    if ((word == "-genv" || word == "-env" || word == "--env") && i + 2 < words.size() &&
        setting_name(words[i + 1]) && words[i + 2].find('=') == std::string::npos) {
      found.emplace_back(words[i + 1], unquoted(words[i + 2]));
      i += 2;
      continue;
    }
    // "-x", "export", "env" and friends stand before it; "--export=ALL,NCCL_ALGO=Ring" around it. A
    // comma starts the next assignment only where one follows ("NCCL_ALGO=ring,tree" is one value).
    std::vector<std::string> pieces;
    for (const std::string& piece : split_list(word, ','))
      if (pieces.empty() || piece.find('=') != std::string::npos)
        pieces.push_back(piece);
      else
        pieces.back() += "," + piece;
    for (const std::string& piece : pieces) {
      const auto eq = piece.find('=');
      if (eq == std::string::npos) continue;
      std::string name = piece.substr(0, eq);
      if (const auto inner = name.rfind('='); inner != std::string::npos) name = name.substr(inner + 1);
      if (!name.empty() && (name.front() == '"' || name.front() == '\'')) name.erase(0, 1);
      if (setting_name(name)) found.emplace_back(name, unquoted(piece.substr(eq + 1)));
    }
  }
  return found;
}

std::optional<std::pair<std::string, std::string>> nccl_setting_in_message(const std::string& message) {
  const std::string marker = " set by environment to ";
  const auto at = message.find(marker);
  if (at == std::string::npos) return std::nullopt;
  const std::vector<std::string> before = readers::split_words(message.substr(0, at));
  if (before.size() != 1 || !setting_name(before[0])) return std::nullopt;
  std::string value = message.substr(at + marker.size());
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
  if (!value.empty() && value.back() == '.') value.pop_back();
  return std::make_pair(before[0], value);
}

bool nccl_setting_followed(const std::string& name) {
  return name == "NCCL_ALGO" || name == "NCCL_PROTO" || name == "NCCL_MIN_NCHANNELS" ||
         name == "NCCL_MIN_CTAS" || name == "NCCL_MAX_NCHANNELS" || name == "NCCL_MAX_CTAS";
}

NcclEnvChoice follow_nccl_settings(const std::map<std::string, NcclSetting>& settings,
                                   const std::string& collective) {
  NcclEnvChoice choice;
  const auto note = [&](const std::string& name, const NcclSetting& s, const std::string& why) {
    choice.not_followed.emplace_back(s.where,
                                     fmt::format("{}={} ({})", name, readers::shown_word(s.value), why));
  };
  const auto one_of = [&](const char* name, const std::vector<std::string>& menu,
                          std::string (*spell)(const std::string&), std::string& out, std::string& where) {
    const auto it = settings.find(name);
    if (it == settings.end()) return;
    std::string why;
    const std::set<std::string> enabled = enabled_by(it->second.value, collective, menu, spell, why);
    if (!why.empty()) return note(name, it->second, why);
    if (enabled.size() == 1) {
      out = *enabled.begin();
      where = it->second.where;
    } else if (enabled.empty()) {
      note(name, it->second, fmt::format("leaves {} none of {}", collective, fmt::join(menu, ", ")));
    } else if (enabled.size() < menu.size()) {
      note(
          name, it->second,
          fmt::format("leaves NCCL a choice among {}; the model chooses among all it has, or runs one forced",
                      fmt::join(enabled, ", ")));
    }
  };
  one_of("NCCL_ALGO", {"tree", "ring", "nvls", "nvls_tree"}, nccl_algorithm_spelling, choice.algorithm,
         choice.algorithm_where);
  one_of("NCCL_PROTO", {"ll", "ll128", "simple"}, nccl_protocol_spelling, choice.protocol,
         choice.protocol_where);
  for (const auto& [name, s] : settings) {
    if (!nccl_setting_followed(name)) {
      if (!without_effect(name)) note(name, s, "the simulated machine is the scenario's");
      continue;
    }
    const bool min = name == "NCCL_MIN_NCHANNELS" || name == "NCCL_MIN_CTAS";
    const bool max = name == "NCCL_MAX_NCHANNELS" || name == "NCCL_MAX_CTAS";
    if (!min && !max) continue;  // NCCL_ALGO, NCCL_PROTO: above
    const auto count = parse_integer_text<long>(s.value);
    if (!count || *count < 1) {
      note(name, s, "not a whole number of channels from 1");
      continue;
    }
    const int c = static_cast<int>(std::min<long>(*count, 1 << 20));
    if (min) choice.min_channels = std::max(choice.min_channels, c);
    if (max) choice.max_channels = choice.max_channels ? std::min(choice.max_channels, c) : c;
    if (choice.channels_where.empty()) choice.channels_where = s.where;
  }
  return choice;
}

}  // namespace aggsim
