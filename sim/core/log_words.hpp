#pragma once
// The words of a log line, shared by the measurement readers and the readers of NCCL's own lines
// (algorithms/nccl/calibration), which sit below them.
#include <string>
#include <vector>

namespace aggsim::readers {

std::vector<std::string> split_words(const std::string& line);
// A word of a log in a message, cut to `most` bytes and "..." (a hostile line may hold a word of a
// megabyte).
std::string shown_word(const std::string& word, std::size_t most = 60);
bool parse_number(const std::string& word, double& value);  // the whole word, finite

}  // namespace aggsim::readers
