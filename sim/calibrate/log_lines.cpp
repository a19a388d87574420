// Lines of a benchmark log as the readers see them: launchers' per-line prefixes removed, and
// NCCL's debug lines that were glued to a table row's text split off. No regular expression
// (std::regex recurses once per character: a long line overflowed the stack); every scan here is
// one pass over the line.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "sim/calibrate/readers.hpp"
#include "sim/core/error.hpp"

namespace aggsim::readers {

namespace {

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}
bool is_space(char c) {
  return c == ' ' || c == '\t';
}

// Slurm's `srun -l` label: "0: ", " 12: ", "123: " (the task number, right-aligned), or "0:" on an
// empty line. Returns where the text after it starts, or 0.
std::size_t srun_label_end(const std::string& line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  const std::size_t digits = i;
  while (i < line.size() && is_digit(line[i])) ++i;
  if (i == digits || i - digits > 9 || i >= line.size() || line[i] != ':') return 0;
  ++i;
  if (i == line.size()) return i;
  return line[i] == ' ' ? i + 1 : 0;
}

// Open MPI's --tag-output "[1,0]<stdout>:" and the "[0] " of other launchers, with one blank after.
// Returns where the text after it starts, or 0.
std::size_t rank_tag_end(const std::string& line, std::size_t at) {
  if (at >= line.size() || line[at] != '[') return 0;
  std::size_t i = at + 1;
  while (i < line.size() && (is_digit(line[i]) || line[i] == ',')) ++i;
  if (i == at + 1 || i >= line.size() || line[i] != ']') return 0;
  ++i;
  for (const std::string tag : {"<stdout>:", "<stderr>:"})
    if (line.compare(i, tag.size(), tag) == 0) {
      i += tag.size();
      break;
    }
  if (i < line.size() && is_space(line[i])) ++i;
  return i;
}

std::string without_launcher_prefix(const std::string& line) {
  std::size_t at = srun_label_end(line);
  if (const std::size_t tag = rank_tag_end(line, at)) at = tag;
  return at == 0 ? line : line.substr(at);
}

// "host:pid:tid": a word of at least one character, then two ':'-separated digit runs at its end.
// Returns where "host" starts inside [begin, end), or npos.
std::size_t debug_origin_start(const std::string& line, std::size_t begin, std::size_t end) {
  std::size_t i = end;
  for (int field = 0; field < 2; ++field) {
    const std::size_t digits_end = i;
    while (i > begin && is_digit(line[i - 1])) --i;
    if (i == digits_end || i == begin || line[i - 1] != ':') return std::string::npos;
    --i;
  }
  return i > begin ? begin : std::string::npos;
}

}  // namespace

std::vector<std::string> log_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(without_launcher_prefix(line));
  }
  return lines;
}

std::size_t nccl_marker(const std::string& line) {
  std::size_t first = std::string::npos;
  for (const char* marker : {"NCCL INFO", "NCCL WARN", "NCCL TRACE", "NCCL CALL"}) {
    const std::size_t at = line.find(marker);
    if (at < first) first = at;
  }
  return first;
}

std::string debug_host(const std::string& line) {
  const std::size_t start = line.find_first_not_of(" \t");
  if (start == std::string::npos) return "";
  std::size_t end = start;
  while (end < line.size() && !is_space(line[end])) ++end;
  if (debug_origin_start(line, start, end) != start) return "";
  // The host is what precedes ":pid:tid".
  std::size_t cut = end;
  for (int field = 0; field < 2; ++field) cut = line.rfind(':', cut - 1);
  return line.substr(start, cut - start);
}

void KnownHosts::add(const std::string& host) {
  if (host.empty() || host.size() > 255 || names_.size() >= 1024 || names_.count(host)) return;
  if (std::find(lengths_.begin(), lengths_.end(), host.size()) == lengths_.end()) {
    if (lengths_.size() >= 16) return;
    lengths_.push_back(host.size());
  }
  names_.insert(host);
}

std::size_t KnownHosts::longest_suffix(const std::string& word) const {
  std::size_t best = 0;
  for (std::size_t length : lengths_)
    if (length > best && length <= word.size() && names_.count(word.substr(word.size() - length)))
      best = length;
  return best;
}

GluedSplit split_glued_debug(const std::string& line, const KnownHosts& known_hosts) {
  const std::size_t marker = nccl_marker(line);
  if (marker == std::string::npos) return {line, ""};
  // NCCL's prefix: "[timestamp] host:pid:tid [dev] [time file:line] NCCL LEVEL": find the
  // "host:pid:tid" word among the few words before the marker.
  std::size_t end = marker;
  for (int word = 0; word < 4; ++word) {
    while (end > 0 && is_space(line[end - 1])) --end;
    std::size_t begin = end;
    while (begin > 0 && !is_space(line[begin - 1])) --begin;
    if (begin == end) break;
    if (debug_origin_start(line, begin, end) == begin) {
      // The word may carry the end of the text it was glued to ("-1host:1:2"): the host is a
      // known one (it starts other debug lines of this log), else what follows a launcher tag,
      // else what follows a leading number.
      const std::size_t colon = line.rfind(':', line.rfind(':', end - 1) - 1);
      const std::string word_host = line.substr(begin, colon - begin);
      std::size_t host_at = begin;
      if (const std::size_t known = known_hosts.longest_suffix(word_host)) {
        host_at = colon - known;
      } else {
        for (const std::string tag : {"]<stdout>:", "]<stderr>:"})
          if (const auto t = word_host.rfind(tag); t != std::string::npos)
            host_at = std::max(host_at, begin + t + tag.size());
        if (host_at == begin) {
          // "0h100node": a number then a name; a host that starts with a digit is only found above.
          std::size_t i = begin;
          if (i < colon && (line[i] == '-' || line[i] == '+')) ++i;
          const std::size_t digits = i;
          while (i < colon && (is_digit(line[i]) || line[i] == '.')) ++i;
          if (i > digits && i < colon && std::isalpha(static_cast<unsigned char>(line[i]))) host_at = i;
        }
      }
      std::string head = line.substr(0, host_at);
      // A launcher's tag written where the debug line began: "-1[0] host...", "0[1,0]<stdout>:host".
      while (!head.empty() && is_space(head.back())) head.pop_back();
      for (const std::string tag : {"<stdout>:", "<stderr>:"})
        if (head.size() >= tag.size() && head.compare(head.size() - tag.size(), tag.size(), tag) == 0)
          head.erase(head.size() - tag.size());
      if (!head.empty() && head.back() == ']') {
        std::size_t i = head.size() - 1;
        while (i > 0 && (is_digit(head[i - 1]) || head[i - 1] == ',')) --i;
        if (i > 0 && i < head.size() - 1 && head[i - 1] == '[') head.erase(i - 1);
      }
      // NCCL's own timestamp (NCCL_DEBUG_TIMESTAMP_LEVELS): "[2025-03-03 12:11:38] host...".
      if (!head.empty() && head.back() == ']') {
        const std::size_t open = head.rfind('[');
        if (open != std::string::npos && head.find(':', open) != std::string::npos) head.erase(open);
      }
      return {head, line.substr(host_at)};
    }
    end = begin;
  }
  // A marker without NCCL's prefix (a quoted or cut line): all of it is NCCL's.
  return {"", line};
}

void add_row(MeasurementFile& out, const Measurement& row) {
  if (out.rows.size() >= kMaxMeasurementRows)
    throw InputError(fmt::format("{}: more than {} measurement rows in one file; aggsim reads at most {} "
                                 "(each is a simulation): split the log, or keep the sizes you compare",
                                 row.source, kMaxMeasurementRows, kMaxMeasurementRows));
  out.rows.push_back(row);
}

}  // namespace aggsim::readers
