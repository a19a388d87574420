// nccl-tests output (all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf,
// sendrecv_perf). Versions differ in their columns (with or without `redop`, `root`, `error` or
// `#wrong`), so rows are read by the names in the last column header seen. The "Rank N ... on HOST
// device D" lines give the ranks and hosts of the table that follows; both `mpirun -np N` and
// `-g N` runs print one such line per rank.
//
// With NCCL_DEBUG=INFO on the same stream, NCCL's lines cut the rows: nccl-tests prints a row's
// size columns, runs the out-of-place calls (NCCL prints a tuning line per call), prints their
// columns, and so on. A row is therefore read from its pieces, NCCL's lines between them set aside
// and its tuning lines matched to the row afterwards by collective and size.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "algorithms/nccl/calibration/nccl_env.hpp"
#include "algorithms/nccl/calibration/nccl_info_lines.hpp"
#include "sim/calibrate/readers.hpp"
#include "sim/core/checked.hpp"
#include "sim/core/error.hpp"

namespace aggsim::readers {

namespace {

bool all_digits(const std::string& word) {
  return !word.empty() && word.find_first_not_of("0123456789") == std::string::npos;
}

// A cell that says "no number here" (a published table without its out-of-place columns).
bool missing_cell(const std::string& word) {
  return word == "-" || word == "N/A" || word == "n/a";
}

bool numeric_cell(const std::string& word) {
  double value = 0;
  return missing_cell(word) || parse_number(word, value);
}

// Columns of the last table header, by name: the first time/algbw group (out-of-place) and the
// second one (in-place), when the table has it.
struct Header {
  std::vector<std::string> columns;
  std::size_t time = 0, algbw = 0;
  std::optional<std::size_t> in_place_time, in_place_algbw;
  bool first_is_in_place = false;  // one group, under a label line naming only "in-place"
};

std::optional<Header> read_header(const std::vector<std::string>& words, bool label_in_place_only) {
  std::vector<std::string> cols(words.begin() + (!words.empty() && words[0] == "#" ? 1 : 0), words.end());
  if (cols.empty() || cols[0] != "size") return std::nullopt;
  std::vector<std::size_t> times;
  for (std::size_t c = 0; c < cols.size(); ++c)
    if (cols[c] == "time") times.push_back(c);
  const auto algbw_after = [&](std::size_t from) -> std::optional<std::size_t> {
    for (std::size_t c = from; c < cols.size(); ++c)
      if (cols[c] == "algbw") return c;
    return std::nullopt;
  };
  if (times.empty() || !algbw_after(times[0])) return std::nullopt;
  Header h;
  h.columns = cols;
  h.time = times[0];
  h.algbw = *algbw_after(times[0]);
  if (times.size() > 1 && algbw_after(times[1])) {
    h.in_place_time = times[1];
    h.in_place_algbw = algbw_after(times[1]);
  }
  h.first_is_in_place = times.size() == 1 && label_in_place_only;
  return h;
}

struct RankLine {
  std::string rank;  // digits, as printed
  std::string host;
};

// "Rank N [Group G] Pid P on HOST device D ...", anywhere in the line's words.
std::optional<RankLine> rank_line(const std::vector<std::string>& words) {
  for (std::size_t k = 0; k < words.size(); ++k) {
    if (words[k] != "Rank" || k + 1 >= words.size() || !all_digits(words[k + 1])) continue;
    std::size_t i = k + 2;
    if (i + 1 < words.size() && words[i] == "Group" && all_digits(words[i + 1])) i += 2;
    if (i + 4 < words.size() && words[i] == "Pid" && all_digits(words[i + 1]) && words[i + 2] == "on" &&
        words[i + 4].rfind("device", 0) == 0)
      return RankLine{words[k + 1], words[i + 3]};
  }
  return std::nullopt;
}

// A line of dots ("...", "#  ...", "…") inside a device list: its poster left rank lines out, so
// the lines shown do not give the run's ranks and hosts.
bool ellipsis_line(std::vector<std::string> words) {
  if (!words.empty() && words[0] == "#") words.erase(words.begin());
  if (words.size() != 1) return false;
  std::string w = words[0];
  w.erase(0, std::min(w.size(), w.find_first_not_of('#')));  // "#..."
  return w == "\u2026" || (w.size() >= 3 && w.find_first_not_of('.') == std::string::npos);
}

std::string file_name_collective(const std::string& label) {
  const std::string stem = std::filesystem::path(label).stem().string();
  for (const char* name : {"all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter",
                           "reducescatter", "broadcast", "sendrecv"})
    if (stem.find(name) != std::string::npos) return canonical_collective(name);
  return "";
}

bool same_choice(const CollectiveChoice& a, const CollectiveChoice& b) {
  return a.nccl_algorithm == b.nccl_algorithm && a.protocol == b.protocol && a.channels == b.channels;
}

std::string describe(const CollectiveChoice& c) {
  std::string text = c.nccl_algorithm;
  if (!c.protocol.empty()) text += "/" + c.protocol;
  if (c.channels > 0) text += fmt::format(" on {} channel{}", c.channels, c.channels == 1 ? "" : "s");
  return text;
}

// How often one choice was seen for one key.
struct Tally {
  CollectiveChoice choice;
  long count = 0;
  std::size_t first_line = 0;  // index, for ties and messages
  std::string first_where;
};

class NcclTestsReader {
 public:
  NcclTestsReader(const std::vector<std::string>& lines, const std::string& label,
                  const MeasurementDefaults& defaults, MeasurementFile& out)
      : lines_(lines), label_(label), defaults_(defaults), out_(out) {}

  void read() {
    find_hosts_and_collective();
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      const std::string where = fmt::format("{}:{}", label_, i + 1);
      const GluedSplit split = split_glued_debug(lines_[i], hosts_);
      // The row's piece came first on the stream, NCCL's line after it.
      text_line(split.text, where);
      if (!split.debug.empty()) debug_line(split.debug, where, i);
    }
    flush_pending();
    match_tuning_lines();
    set_channels();
    follow_settings();
  }

 private:
  // Hosts that start NCCL's lines (to find where one glued to a row begins), and the collective
  // the log names, if it does.
  void find_hosts_and_collective() {
    const std::string starting = "Collective test starting:";
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      const std::string& l = lines_[i];
      if (named_where_.empty())
        if (const auto at = l.find(starting); at != std::string::npos) {
          const auto words = split_words(l.substr(at + starting.size()));
          named_where_ = fmt::format("{}:{}", label_, i + 1);
          set_named_collective(words.empty() ? "" : words[0], named_where_);
        }
      if (nccl_marker(l) != std::string::npos) hosts_.add(debug_host(l));
    }
    if (named_where_.empty()) {
      collective_ = file_name_collective(label_);
      if (collective_.empty()) collective_ = defaults_.collective;
    }
  }

  void set_named_collective(const std::string& given, const std::string& where) {
    const std::string raw = shown_word(given);
    const std::string name = canonical_collective(given);
    if (!defaults_.collective.empty() && name != defaults_.collective)
      throw InputError(fmt::format("{}: this log names its collective, '{}', but --collective says {}", where,
                                   raw, defaults_.collective));
    collective_ = name;
    named_raw_ = raw;
    named_where_ = where;
  }

  void text_line(const std::string& line, const std::string& where) {
    if (line.find("Using devices") != std::string::npos) {
      flush_pending();
      begin_device_list();  // a new run's table follows
      if (header_in_run_) ++run_, header_in_run_ = false;
      return;
    }
    const std::string starting = "Collective test starting:";
    if (const auto at = line.find(starting); at != std::string::npos) {
      flush_pending();
      const auto words = split_words(line.substr(at + starting.size()));
      set_named_collective(words.empty() ? "" : words[0], where);
      return;
    }
    if (line.find("NCCL_") != std::string::npos)
      for (const auto& [name, value] : nccl_settings_in_command(line)) add_setting(name, value, where);
    const auto words = split_words(line);
    if (words.empty()) return;  // NCCL's WARN lines start with an empty one: a cut row goes on
    if (in_devices_ && ellipsis_line(words)) {
      if (abbreviated_where_.empty()) abbreviated_where_ = where;
      return;
    }
    if (const auto r = rank_line(words)) {
      flush_pending();
      const auto rank = parse_integer_text<long>(r->rank);
      if (!rank || *rank >= kMaxRanks)
        throw InputError(
            fmt::format("{}: the rank number of this 'Rank N ... on HOST' line is beyond {}, the "
                        "most ranks aggsim simulates",
                        where, static_cast<long>(kMaxRanks)));
      if (!in_devices_) begin_device_list();
      if (ranks_.empty()) rank_lines_where_ = where;
      ranks_.insert(static_cast<int>(*rank));
      hosts_seen_.insert(r->host);
      return;
    }
    const auto place = [](const std::string& w) { return w == "in-place" || w == "out-of-place"; };
    if ((words[0] == "#" || place(words[0])) &&
        std::find_if(words.begin(), words.end(), place) != words.end()) {
      flush_pending();
      label_in_place_only_ = std::find(words.begin(), words.end(), "out-of-place") == words.end();
      return;
    }
    if (auto h = read_header(words, label_in_place_only_)) {
      flush_pending();
      header_ = *h;
      header_in_run_ = true;
      in_devices_ = false;
      label_in_place_only_ = false;
      return;
    }
    const std::size_t width = header_.columns.size();
    if (!pending_.empty() && pending_.size() + words.size() <= width &&
        std::all_of(words.begin(), words.end(), numeric_cell)) {
      pending_.insert(pending_.end(), words.begin(), words.end());  // the next piece of a cut row
      if (pending_.size() == width) {
        const std::vector<std::string> row = std::move(pending_);
        pending_.clear();
        read_row(row, pending_where_);
      }
      return;
    }
    flush_pending();
    double size = 0;
    if (words[0][0] == '#' || !parse_number(words[0], size)) return;  // comments, other output
    if (width == 0) return;                                           // numbers before any table
    if (words.size() < width) {  // a row cut by NCCL's lines, or by the end of the log
      pending_ = words;
      pending_where_ = where;
      return;
    }
    read_row(words, where);
  }

  // A row that never got all its columns.
  void flush_pending() {
    if (pending_.empty()) return;
    skip_row(pending_, pending_where_);
    pending_.clear();
  }

  // A device list starts: the ranks, hosts and "..." line seen so far were another run's.
  void begin_device_list() {
    ranks_.clear();
    hosts_seen_.clear();
    abbreviated_where_.clear();
    in_devices_ = true;
  }

  // The row's ranks and nodes: --shape's, checked against the rank lines; else the rank lines';
  // else --ranks/--nodes. A list abbreviated with "..." shows only some ranks and hosts: it needs
  // --shape, and agrees with it when its highest rank and its hosts fit in it.
  void set_shape(Measurement& row, const std::string& where) const {
    const int ranks = static_cast<int>(ranks_.size()), nodes = static_cast<int>(hosts_seen_.size());
    const bool abbreviated = !abbreviated_where_.empty();
    if (!defaults_.shape_option.empty()) {
      row.ranks = defaults_.ranks;
      row.nodes = defaults_.nodes;
      const bool fits = ranks_.empty() || (abbreviated ? *ranks_.rbegin() < row.ranks && nodes <= row.nodes
                                                       : ranks == row.ranks && nodes == row.nodes);
      if (!fits)
        throw InputError(fmt::format(
            "{}: these {}'Rank N ... on HOST' lines give {}{} rank{} on {} node{}, but {} says {} on {}",
            rank_lines_where_, abbreviated ? "abbreviated " : "", abbreviated ? "at least " : "",
            abbreviated ? *ranks_.rbegin() + 1 : ranks, abbreviated || ranks != 1 ? "s" : "", nodes,
            nodes == 1 ? "" : "s", defaults_.shape_option, row.ranks, row.nodes));
    } else {
      if (abbreviated)
        throw InputError(fmt::format(
            "{}: this device list is abbreviated ('...'), so its 'Rank N ... on HOST' lines do not give "
            "the run's ranks and nodes: give --shape FILE=RANKSxNODES",
            abbreviated_where_));
      row.ranks = ranks_.empty() ? defaults_.ranks : ranks;
      row.nodes = hosts_seen_.empty() ? defaults_.nodes : nodes;
    }
    if (row.ranks <= 0)
      throw InputError(fmt::format(
          "{}: no 'Rank N ... on HOST' lines before this table: give --ranks and --nodes, or --shape",
          where));
    if (row.nodes <= 0) row.nodes = 1;
  }

  void skip_row(const std::vector<std::string>& words, const std::string& where) {
    out_.skipped.push_back({where, fmt::format("expected {} columns ({}), found {}", header_.columns.size(),
                                               fmt::join(header_.columns, " "), words.size())});
  }

  void read_row(const std::vector<std::string>& words, const std::string& where) {
    if (words.size() != header_.columns.size()) {
      skip_row(words, where);
      return;
    }
    // The out-of-place time; a table that left it out ("-", "N/A") gives the in-place one.
    std::size_t time_col = header_.time, algbw_col = header_.algbw;
    bool in_place = header_.first_is_in_place;
    if ((missing_cell(words[time_col]) || missing_cell(words[algbw_col])) && header_.in_place_time) {
      time_col = *header_.in_place_time;
      algbw_col = *header_.in_place_algbw;
      in_place = true;
    }
    double size = 0, time_us = 0, algbw = 0;
    parse_number(words[0], size);
    if (size < 0 || size != std::floor(size) || !parse_number(words[time_col], time_us) || time_us <= 0 ||
        !parse_number(words[algbw_col], algbw)) {
      out_.skipped.push_back({where, "size, time or algbw is not a number"});
      return;
    }
    if (size >= kMaxBytes) {
      out_.skipped.push_back({where, "size is not below 2^63 bytes"});
      return;
    }
    // algbw is printed as size / time: a cut or mangled row disagrees with it.
    const double expected = size / (time_us * 1e3);
    if (algbw >= 0.01 && std::fabs(expected - algbw) > 0.02 * algbw + 0.006) {
      out_.skipped.push_back({where, fmt::format("algbw {} does not match size / time = {:.2f} GB/s",
                                                 words[algbw_col], expected)});
      return;
    }
    // nccl-tests prints 0-byte rows when a size is below one element per rank (all_gather with
    // small -b): they time no transfer, so there is nothing to fit or compare.
    if (size == 0) return;
    if (collective_.empty()) {
      if (!named_where_.empty())
        throw InputError(fmt::format("{}: {} names '{}', not a collective aggsim reads ({})", where,
                                     named_where_, named_raw_, fmt::join(collective_names(), ", ")));
      throw InputError(
          fmt::format("{}: cannot tell which collective this is (no 'Collective test starting' line); give "
                      "--collective, or name the file after it, e.g. all_reduce_perf.txt",
                      where));
    }
    Measurement row;
    row.collective = collective_;
    set_shape(row, where);
    row.bytes = static_cast<std::uint64_t>(size);
    row.time_s = time_us * 1e-6;
    row.source = where;
    row.in_place = in_place;
    add_row(out_, row);
    row_runs_.push_back(run_);
  }

  void debug_line(const std::string& line, const std::string& where, std::size_t index) {
    const auto message = nccl_info_message(line);
    if (!message) return;
    if (const auto setting = nccl_setting_in_message(*message)) {
      add_setting(setting->first, setting->second, where);
      return;
    }
    const TuningParse tuning = parse_tuning_message(*message);
    if (tuning.is_tuning) {
      if (!tuning.line) {
        out_.skipped.push_back({where, "NCCL tuning line: " + tuning.why});
        return;
      }
      const TuningLine& t = *tuning.line;
      if (!t.function.empty() && t.collective.empty()) return;  // Reduce, AllToAll, ...: no row of ours
      const bool per_rank =
          t.bytes_per_rank && (t.collective == "all_gather" || t.collective == "reduce_scatter");
      auto& tallies = tuning_[{run_, t.collective, t.bytes, per_rank}];
      auto it = std::find_if(tallies.begin(), tallies.end(),
                             [&](const Tally& x) { return same_choice(x.choice, t.choice); });
      if (it == tallies.end()) {
        tallies.push_back({t.choice, 0, index, where});
        it = tallies.end() - 1;
      }
      ++it->count;
      return;
    }
    const auto channels = parse_channel_message(*message);
    if (!channels) return;
    if (channels->ring) {
      if (ring_where_.empty()) ring_where_ = where;
      ring_total_ = std::max(ring_total_, channels->coll);
      ring_indices_ = std::max(ring_indices_, channels->ring_index + 1);
    } else if (coll_channels_ == 0) {
      coll_channels_ = channels->coll;
      nvls_channels_ = std::max(0, channels->nvls);
      coll_where_ = where;
    } else if (channels->coll != coll_channels_ && !channels_warned_) {
      out_.warnings.push_back({where, fmt::format("NCCL reports {} coll channels here and {} at {}: "
                                                  "observed_channels keeps the first",
                                                  channels->coll, coll_channels_, coll_where_)});
      channels_warned_ = true;
    }
  }

  // Each row gets the choice NCCL made most often for its collective and size in its run.
  void match_tuning_lines() {
    if (tuning_.empty()) return;
    for (std::size_t r = 0; r < out_.rows.size(); ++r) {
      Measurement& row = out_.rows[r];
      const bool split = row.collective == "all_gather" || row.collective == "reduce_scatter";
      std::vector<Tally> merged;
      for (const std::string& collective : {row.collective, std::string()}) {
        std::vector<std::tuple<int, std::string, std::uint64_t, bool>> keys;
        keys.emplace_back(row_runs_[r], collective, row.bytes, false);
        if (!split)
          keys.emplace_back(row_runs_[r], collective, row.bytes, true);
        else if (row.bytes % static_cast<std::uint64_t>(row.ranks) == 0)
          keys.emplace_back(row_runs_[r], collective, row.bytes / static_cast<std::uint64_t>(row.ranks),
                            true);
        for (const auto& key : keys) {
          const auto found = tuning_.find(key);
          if (found == tuning_.end()) continue;
          for (const Tally& t : found->second) {
            auto it = std::find_if(merged.begin(), merged.end(),
                                   [&](const Tally& x) { return same_choice(x.choice, t.choice); });
            if (it == merged.end()) {
              merged.push_back(t);
            } else {
              it->count += t.count;
              if (t.first_line < it->first_line)
                it->first_line = t.first_line, it->first_where = t.first_where;
            }
          }
        }
      }
      if (merged.empty()) continue;
      std::stable_sort(merged.begin(), merged.end(), [](const Tally& a, const Tally& b) {
        return a.count != b.count ? a.count > b.count : a.first_line < b.first_line;
      });
      row.observed = merged[0].choice;
      row.observed_source = merged[0].first_where;
      if (merged.size() > 1) {
        std::string others;
        for (std::size_t k = 1; k < merged.size(); ++k)
          others += fmt::format("{}{} in {} (first at {})", k > 1 ? ", " : "", describe(merged[k].choice),
                                merged[k].count, merged[k].first_where);
        out_.warnings.push_back(
            {row.source,
             fmt::format("NCCL's tuning lines for this size name {} in {} "
                         "call{} (first at {}) and {}; kept {}",
                         describe(merged[0].choice), merged[0].count, merged[0].count == 1 ? "" : "s",
                         merged[0].first_where, others, describe(merged[0].choice))});
      }
    }
  }

  // One log, one value per setting the model follows: NCCL's INFO lines repeat the launch line's
  // (any case). Others (an interface name) may differ from host to host: the first is kept.
  void add_setting(const std::string& name, const std::string& value, const std::string& where) {
    const auto lower = [](std::string text) {
      for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return text;
    };
    const auto [it, added] = out_.nccl_settings.emplace(name, NcclSetting{value, where});
    if (added || lower(it->second.value) == lower(value) || !nccl_setting_followed(name)) return;
    // Said once the file has shown a table (nothing of a file is echoed before it is a log).
    if (setting_conflict_.empty())
      setting_conflict_ =
          fmt::format("{}: {}={} here, but {} says {}={}: keep runs of one setting per file", where, name,
                      shown_word(value), it->second.where, name, shown_word(it->second.value));
  }

  // Each row gets what the settings leave its collective (calibrate and compare say what of them
  // nccl_allreduce cannot follow; other algorithms are not NCCL's).
  void follow_settings() {
    if (out_.nccl_settings.empty() || out_.rows.empty()) return;
    if (!setting_conflict_.empty()) throw InputError(setting_conflict_);
    for (auto& row : out_.rows) row.env = follow_nccl_settings(out_.nccl_settings, row.collective);
  }

  void set_channels() {
    if (coll_channels_ > 0) {
      out_.observed_channels = coll_channels_;
      out_.observed_nvls_channels = nvls_channels_;
      out_.observed_channels_source = coll_where_;
    } else if (ring_total_ > 0 || ring_indices_ > 0) {
      out_.observed_channels = ring_total_ > 0 ? ring_total_ : ring_indices_;
      out_.observed_channels_source = ring_where_;
    }
    for (auto& row : out_.rows) row.init_channels = out_.observed_channels;
  }

  const std::vector<std::string>& lines_;
  const std::string& label_;
  const MeasurementDefaults& defaults_;
  MeasurementFile& out_;

  KnownHosts hosts_;  // that start NCCL's lines
  std::string collective_;
  std::string named_raw_, named_where_;  // the "Collective test starting" line, if any
  std::set<int> ranks_;
  std::set<std::string> hosts_seen_;
  std::string rank_lines_where_;
  std::string abbreviated_where_;  // the "..." line of the current device list, if any
  bool in_devices_ = false;
  Header header_;
  bool label_in_place_only_ = false;
  int run_ = 0;
  bool header_in_run_ = false;
  std::vector<std::string> pending_;
  std::string pending_where_;
  std::vector<int> row_runs_;
  std::map<std::tuple<int, std::string, std::uint64_t, bool>, std::vector<Tally>> tuning_;
  int coll_channels_ = 0, nvls_channels_ = 0, ring_total_ = 0, ring_indices_ = 0;
  std::string coll_where_, ring_where_;
  bool channels_warned_ = false;
  std::string setting_conflict_;  // the first followed setting given two values
};

}  // namespace

void read_nccl_tests(const std::vector<std::string>& lines, const std::string& label,
                     const MeasurementDefaults& defaults, MeasurementFile& out) {
  NcclTestsReader(lines, label, defaults, out).read();
}

}  // namespace aggsim::readers
