#pragma once
// Finding input files by path or by name from anywhere. A path is tried as given (relative to the
// working directory), then relative to the folder of the file that names it (the scenario), then in
// the data folder: $AGGSIM_DATA when set, else the data `cmake --install` put beside the binary
// (<prefix>/share/aggsim for <prefix>/bin/aggsim), else the source tree a build-tree binary was built
// from. In the data folder a bare name also names a shipped file of its kind: `resnet50` is
// scenarios/models/resnet50.yaml, `cluster_16` platforms/cluster_16.xml, `default` scenarios/default.yaml,
// `ring_allreduce_8` algorithms/msccl/programs/ring_allreduce_8.xml.
#include <string>
#include <vector>

namespace aggsim {

// `other`: no shipped names (found by path only).
enum class DataKind { scenario, platform, layer_table, calibration, msccl_program, other };

// The data folder ("" when there is none: no $AGGSIM_DATA, no installed data, no source tree).
// Throws InputError when $AGGSIM_DATA is set but names no folder.
std::string data_folder();

// The paths tried for `given`, in order (see above); `referrer_dir` is the folder of the file that
// names it ("" for a command-line argument).
std::vector<std::string> data_candidates(const std::string& given, const std::string& referrer_dir,
                                         DataKind kind);

// The first candidate that exists, or "" (the caller reports the candidates). A path the system
// cannot resolve (symlink loop, over-long name) is an InputError naming it.
std::string find_data_file(const std::string& given, const std::string& referrer_dir, DataKind kind,
                           const std::string& what);

// The names the data folder ships for `kind` (resnet50, cluster_16, ...), sorted.
std::vector<std::string> shipped_names(DataKind kind);

}  // namespace aggsim
