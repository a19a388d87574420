#pragma once
// NCCL settings a benchmark log states: the NAME=VALUE words of its launch line (`mpirun -x
// NCCL_ALGO=Ring`, `NCCL_PROTO=Simple ./all_reduce_perf`, `export NCCL_MIN_NCHANNELS=24`, MPICH's
// `-genv NCCL_ALGO Ring`) and NCCL's own "NCCL_ALGO set by environment to Ring" INFO lines. A run
// told to use one algorithm, protocol or channel count is simulated that way; without this, a
// forced-ring log would be fitted or compared as if NCCL had chosen freely.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace aggsim {

// The NCCL_* assignments of a line that is not NCCL's own: "NCCL_X=V" words, and "-genv NCCL_X V" /
// "-env NCCL_X V" pairs. Quotes around a value are dropped.
std::vector<std::pair<std::string, std::string>> nccl_settings_in_command(const std::string& line);

// NCCL's "NCCL_X set by environment to V" message (the text after "NCCL INFO "; integer settings
// end in a period, which is dropped).
std::optional<std::pair<std::string, std::string>> nccl_setting_in_message(const std::string& message);

struct NcclSetting {
  std::string value;
  std::string where;  // "file:line" of the first line that states it
};

// What the model follows of a log's settings for one collective.
struct NcclEnvChoice {
  std::string algorithm;  // the one algorithm NCCL_ALGO leaves this collective ("ring", ...), else empty
  std::string algorithm_where;
  std::string protocol;  // the one protocol NCCL_PROTO leaves ("ll", "ll128", "simple"), else empty
  std::string protocol_where;
  int min_channels = 0;  // NCCL_MIN_NCHANNELS / NCCL_MIN_CTAS (the larger), 0: not set
  int max_channels = 0;  // NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS (the smaller), 0: not set
  std::string channels_where;
  // Settings that change what NCCL does and that the model does not follow: where each is stated,
  // and "NAME=VALUE (why)".
  std::vector<std::pair<std::string, std::string>> not_followed;
};

// Whether the model follows the setting (NCCL_ALGO, NCCL_PROTO and the channel bounds).
bool nccl_setting_followed(const std::string& name);

// `settings` by name. NCCL_ALGO and NCCL_PROTO are read as NCCL parses them: a list of names, "^"
// in front to disable rather than enable, and from NCCL 2.24 "func:list;func:list" per collective
// (a part without "func:" applies to every collective). Only a list that leaves exactly one of the
// model's algorithms (ring, tree, nvls, nvls_tree) or protocols is followed.
NcclEnvChoice follow_nccl_settings(const std::map<std::string, NcclSetting>& settings,
                                   const std::string& collective);

}  // namespace aggsim
