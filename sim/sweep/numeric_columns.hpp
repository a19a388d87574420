#pragma once
// Swept values as numbers: a key swept over quantities with units (`10Gbps`, `25GBps`, `64MiB`,
// `2ms`, `100Gf`) gets a second results.csv column in SI base units, so analysis reads numbers and
// never parses unit strings. Keys swept over plain numbers (ranks) or names need no such column.
#include <optional>
#include <string>
#include <vector>

namespace aggsim {

struct NumericColumn {
  std::string name;                // e.g. platform.bandwidth_Bps, model.size_bytes, platform.latency_s
  std::vector<std::string> cells;  // one per value, shortest round-trip decimal
};

// The column for one swept key, given its values as written (YAML flow text), or nothing when no
// value carries a unit or the values do not all parse as the same kind of quantity.
std::optional<NumericColumn> numeric_column(const std::string& key, const std::vector<std::string>& values);

}  // namespace aggsim
