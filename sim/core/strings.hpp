#pragma once
// Small text helpers shared by every layer.
#include <cstdint>
#include <string>
#include <vector>

namespace aggsim {

// "a, b,c" -> {"a", "b", "c"}: the items between separators, spaces and tabs around each trimmed.
// An empty item stays (callers reject it with their own message); "" gives one empty item.
std::vector<std::string> split_list(const std::string& text, char separator = ',');

// "8, [1, 2], {a: 1, b: 2}" -> {"8", "[1, 2]", "{a: 1, b: 2}"}: a comma list of YAML flow values,
// split only at commas outside brackets, braces and quotes; items trimmed.
std::vector<std::string> split_flow_list(const std::string& text);

// Compares names in natural order: "host-2" < "host-10" (digit runs by value; SimGrid sorts host
// names as text). A total order: "01" sorts after "1".
bool natural_less(const std::string& a, const std::string& b);

// " (did you mean 'ring_allreduce'?)" when one of `known` is within two edits of `given` (the
// closest; the first of equals), else "": the one hint every misspelt key and name gets.
std::string did_you_mean(const std::string& given, const std::vector<std::string>& known);
// The name did_you_mean suggests, or "" when none is near.
std::string closest_name(const std::string& given, const std::vector<std::string>& known);
// did_you_mean for the names of algorithms, compressors and topologies, which people also shorten:
// failing a near spelling, the one name that starts with `given` followed by '_' or a digit
// (`ring` -> 'ring_allreduce', `torus` -> 'torus2d_allreduce'), else the one name holding `given` as
// a whole '_'-separated word (`hierarchical` in 'hierarchical_allreduce').
std::string did_you_mean_name(const std::string& given, const std::vector<std::string>& known);

// One CSV field as RFC 4180 wants it: quoted ("" for a quote inside) when it holds a comma, a
// quote or a line break; as it is otherwise. Every CSV aggsim writes
// goes through these two, so a scenario name or swept value with a comma stays one cell.
std::string csv_field(const std::string& text);
// The fields quoted as needed, joined by commas, ending with a line feed.
std::string csv_row(const std::vector<std::string>& fields);

// `text` as one cell of a Markdown table: `|` escaped, and `<`, `>` outside code spans (else read as
// HTML tags). The generated references (scenarios/KEYS.md, sim/output/COLUMNS.md) go through it.
std::string markdown_cell(const std::string& text);

// `text` as one shell word: single quotes keep every byte literal in bash and sh (a quote itself
// is written '\''). Slurm scripts and the commands error messages suggest go through it.
std::string shell_quote(const std::string& text);

// The length (1 to 4) of the well-formed UTF-8 sequence at text[i], its code point in `cp`; 0 where
// the bytes there are not UTF-8: a bad lead or continuation byte, a cut sequence, an overlong form,
// a UTF-16 surrogate or a code point beyond U+10FFFF.
std::size_t utf8_sequence(const std::string& text, std::size_t i, std::uint32_t& cp);

}  // namespace aggsim
