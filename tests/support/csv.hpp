#pragma once
// An RFC 4180 CSV reader for tests, written from the RFC (not from aggsim's writer): quoted fields
// may hold commas, line breaks and doubled quotes.
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace aggsim::test {

inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, field_started = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == '"') {
      if (!field.empty()) throw std::runtime_error("CSV: quote inside an unquoted field");
      quoted = field_started = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      field_started = false;
    } else if (c == '\n') {
      row.push_back(field);
      rows.push_back(row);
      row.clear();
      field.clear();
      field_started = false;
    } else if (c != '\r') {
      field += c;
      field_started = true;
    }
  }
  if (quoted) throw std::runtime_error("CSV: unterminated quoted field");
  if (field_started || !row.empty()) {
    row.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

// The rows after the header, each as column name -> field.
inline std::vector<std::map<std::string, std::string>> read_csv_rows(const std::string& text) {
  const auto rows = parse_csv(text);
  std::vector<std::map<std::string, std::string>> out;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    std::map<std::string, std::string> row;
    for (std::size_t c = 0; c < rows[0].size() && c < rows[r].size(); ++c) row[rows[0][c]] = rows[r][c];
    out.push_back(row);
  }
  return out;
}

}  // namespace aggsim::test
