#include "algorithms/nccl/calibration/nccl_info_lines.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "sim/core/log_words.hpp"

namespace aggsim {

namespace {

constexpr int kMaxChannels = 1024;  // NCCL has at most 64; anything beyond is not a channel count

// A word of the line in a message.
std::string shown(const std::string& word) {
  return readers::shown_word(word, 40);
}

bool all_digits(const std::string& word) {
  return !word.empty() && word.find_first_not_of("0123456789") == std::string::npos;
}

std::string lower_without_underscores(const std::string& text) {
  std::string out;
  for (char c : text)
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A count of at most 19 digits below 2^63 (NCCL prints sizes with %ld).
std::optional<std::uint64_t> byte_count(const std::string& word) {
  if (!all_digits(word) || word.size() > 19) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : word) value = value * 10 + static_cast<std::uint64_t>(c - '0');
  if (value > 9223372036854775807ull) return std::nullopt;
  return value;
}

std::optional<int> small_count(const std::string& word, int max) {
  if (!all_digits(word) || word.size() > 6) return std::nullopt;
  const int value = std::stoi(word);
  if (value > max) return std::nullopt;
  return value;
}

// NCCL's algorithm by enum number (2.10 on) or by name (ncclAlgoToString's "RING", ncclAlgoStr's
// "CollNetDirect"; the case differs between versions).
std::string algorithm_by_number_or_name(const std::string& word) {
  static const char* const by_number[] = {"tree",      "ring", "collnet_direct", "collnet_chain", "nvls",
                                          "nvls_tree", "pat"};
  if (all_digits(word)) {
    const auto n = small_count(word, 6);
    return n ? by_number[*n] : "";
  }
  const std::string w = lower_without_underscores(word);
  if (w == "tree" || w == "ring" || w == "nvls" || w == "pat") return w;
  if (w == "collnet" || w == "collnetdirect") return "collnet_direct";
  if (w == "collnetchain") return "collnet_chain";
  if (w == "nvlstree") return "nvls_tree";
  return "";
}

std::string protocol_by_number_or_name(const std::string& word) {
  static const char* const by_number[] = {"ll", "ll128", "simple"};
  if (all_digits(word)) {
    const auto n = small_count(word, 2);
    return n ? by_number[*n] : "";
  }
  const std::string w = lower_without_underscores(word);
  return w == "ll" || w == "ll128" || w == "simple" ? w : "";
}

// "channel{Lo..Hi}={0..15}" -> 16.
std::optional<int> channel_range(const std::string& word) {
  const std::string key = "channel{Lo..Hi}={";
  if (word.compare(0, key.size(), key) != 0 || word.back() != '}') return std::nullopt;
  const std::string range = word.substr(key.size(), word.size() - key.size() - 1);
  const auto dots = range.find("..");
  if (dots == std::string::npos) return std::nullopt;
  const auto lo = small_count(range.substr(0, dots), kMaxChannels - 1);
  const auto hi = small_count(range.substr(dots + 2), kMaxChannels - 1);
  if (!lo || !hi || *lo > *hi) return std::nullopt;
  return *hi - *lo + 1;
}

}  // namespace

std::string nccl_algorithm_spelling(const std::string& word) {
  return all_digits(word) ? "" : algorithm_by_number_or_name(word);
}

std::string nccl_protocol_spelling(const std::string& word) {
  return all_digits(word) ? "" : protocol_by_number_or_name(word);
}

std::optional<std::string> nccl_info_message(const std::string& line) {
  const std::string marker = "NCCL INFO";
  const auto at = line.find(marker);
  if (at == std::string::npos) return std::nullopt;
  const auto start = line.find_first_not_of(" \t", at + marker.size());
  return start == std::string::npos ? std::string() : line.substr(start);
}

TuningParse parse_tuning_message(const std::string& message) {
  TuningParse result;
  const std::string arrow = " Bytes ->";
  const auto at = message.find(arrow);
  if (at == std::string::npos) return result;
  result.is_tuning = true;
  const auto fail = [&](const std::string& why) {
    result.why = why;
    return result;
  };
  const std::string before = message.substr(0, at);
  const auto count_at = before.find_last_of(" \t");
  const std::string count = count_at == std::string::npos ? before : before.substr(count_at + 1);
  TuningLine line;
  const auto bytes = byte_count(count);
  if (!bytes) return fail(fmt::format("the byte count '{}' is not a whole number below 2^63", shown(count)));
  line.bytes = *bytes;
  // "Func:", "Func [Symmetric]:" or nothing before the count.
  std::string kernels;
  std::string head = count_at == std::string::npos ? "" : before.substr(0, count_at);
  while (!head.empty() && (head.back() == ' ' || head.back() == '\t')) head.pop_back();
  if (!head.empty()) {
    if (head.back() != ':') return fail("expected 'Function: N Bytes ->' or 'N Bytes ->'");
    head.pop_back();
    const auto words = readers::split_words(head);
    if (words.empty()) return fail("expected a function name before ':'");
    line.function = words[0];
    for (char c : line.function)
      if (!std::isalnum(static_cast<unsigned char>(c)))
        return fail(fmt::format("'{}' is not one of NCCL's function names", shown(line.function)));
    line.collective = canonical_collective(line.function);
    if (words.size() > 1) {
      const auto open = head.find('[');
      if (open == std::string::npos) return fail("expected 'Function: N Bytes ->' or 'N Bytes ->'");
      kernels = head.substr(open);
      if (kernels != "[Symmetric]" && kernels != "[Copy Engine]")
        return fail(fmt::format("unknown kernel family '{}'", shown(kernels)));
    }
  }
  const auto words = readers::split_words(message.substr(at + arrow.size()));
  line.bytes_per_rank = true;
  if (kernels == "[Copy Engine]") {
    line.choice.nccl_algorithm = "copy_engine";
  } else if (kernels == "[Symmetric]") {
    line.choice.nccl_algorithm = "symmetric";
    if (words.size() < 2 || words[0] != "Kernel") return fail("expected 'Kernel NAME' after 'Bytes ->'");
    for (std::size_t i = 2; i + 1 < words.size(); ++i)
      if (words[i] == "nchannels") {
        const auto c = small_count(words[i + 1], kMaxChannels);
        if (!c)
          return fail(fmt::format("the channel count '{}' is not a number of channels", shown(words[i + 1])));
        line.choice.channels = *c;
      }
  } else {
    if (words.size() < 4 || lower_without_underscores(words[0]) != "algo" ||
        lower_without_underscores(words[2]) != "proto")
      return fail("expected 'Algo A proto P' after 'Bytes ->'");
    line.choice.nccl_algorithm = algorithm_by_number_or_name(words[1]);
    if (line.choice.nccl_algorithm.empty())
      return fail(fmt::format("'{}' is not one of NCCL's algorithms", shown(words[1])));
    line.choice.protocol = protocol_by_number_or_name(words[3]);
    if (line.choice.protocol.empty())
      return fail(fmt::format("'{}' is not one of NCCL's protocols", shown(words[3])));
    for (std::size_t i = 4; i < words.size(); ++i) {
      if (words[i] == "time") {
        double t = 0;
        if (i + 1 >= words.size() || !readers::parse_number(words[i + 1], t))
          return fail("expected a number after 'time'");
        line.bytes_per_rank = false;
        ++i;
      } else if (words[i].rfind("channel{", 0) == 0) {
        const auto c = channel_range(words[i]);
        if (!c) return fail(fmt::format("'{}' is not a channel range {{lo..hi}}", shown(words[i])));
        line.choice.channels = *c;
      } else if (lower_without_underscores(words[i]) == "nchannels") {
        const auto c = i + 1 < words.size() ? small_count(words[i + 1], kMaxChannels) : std::nullopt;
        if (!c || *c == 0) return fail("expected a channel count after 'nChannels'");
        line.choice.channels = *c;
        ++i;
      }
    }
  }
  result.line = line;
  return result;
}

std::optional<ChannelLine> parse_channel_message(const std::string& message) {
  const auto words = readers::split_words(message);
  ChannelLine out;
  if (words.size() >= 3 && words[1] == "coll" && words[2].rfind("channels", 0) == 0) {
    const auto coll = small_count(words[0], kMaxChannels);
    if (!coll || *coll == 0) return std::nullopt;
    out.coll = *coll;
    for (std::size_t i = 3; i + 2 < words.size(); ++i)
      if (words[i + 1] == "nvls" && words[i + 2].rfind("channels", 0) == 0) {
        const auto nvls = small_count(words[i], kMaxChannels);
        if (nvls) out.nvls = *nvls;
      }
    return out;
  }
  // Rings: "Channel 03/08 :" then rank numbers only (transport lines hold "->" and "[...]").
  if (words.size() < 4 || words[0] != "Channel" || words[2] != ":") return std::nullopt;
  for (std::size_t i = 3; i < words.size(); ++i)
    if (!all_digits(words[i])) return std::nullopt;
  out.ring = true;
  const auto slash = words[1].find('/');
  const auto index = small_count(words[1].substr(0, slash), kMaxChannels - 1);
  if (!index) return std::nullopt;
  if (slash == std::string::npos) {
    out.ring_index = *index;
    return out;
  }
  const auto total = small_count(words[1].substr(slash + 1), kMaxChannels);
  if (!total || *index >= *total) return std::nullopt;
  out.coll = *total;
  return out;
}

}  // namespace aggsim
