#include "sim/cli/commands.hpp"

#include <iostream>

namespace aggsim::cli {

int bench_command(const std::vector<std::string>&) {
  std::cerr << "aggsim bench: not built yet\n";
  return 1;
}

}  // namespace aggsim::cli
