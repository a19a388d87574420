#include "sim/cli/key_reference.hpp"

#include <fmt/format.h>

#include <vector>

#include "algorithms/registry.hpp"
#include "sim/core/strings.hpp"
#include "sim/platform/platform_overrides.hpp"
#include "sim/platform/topology.hpp"
#include "sim/scenario/scenario_keys.hpp"
#include "sim/scenario/workload_loader.hpp"
#include "sim/sweep/sweep.hpp"
#include "sim/workload/options.hpp"

namespace aggsim::cli {

namespace {

struct KeyRow {
  std::string path, type, default_text, meaning;
};

struct KeySection {
  std::string title;  // Markdown heading
  std::string note;   // one paragraph, may be empty
  std::vector<KeyRow> rows;
};

std::string type_of(const ParamSpec& spec) {
  return spec.shown_type.empty() ? param_kind_name(spec.kind) : spec.shown_type;
}

std::string default_of(const ParamSpec& spec) {
  if (spec.required) return "required";
  return spec.default_text.empty() ? "-" : spec.default_text;
}

std::string meaning_of(const ParamSpec& spec) {
  std::string out = spec.help;
  if (spec.kind == ParamKind::choice && !spec.choices.empty()) {
    std::string choices;
    for (const auto& c : spec.choices) choices += (choices.empty() ? "" : " | ") + c;
    out += (out.empty() ? "" : "; ") + std::string("one of ") + choices;
  }
  return out;
}

void add_specs(KeySection& section, const std::string& prefix, const std::vector<ParamSpec>& specs) {
  for (const auto& spec : specs)
    section.rows.push_back({prefix + spec.key, type_of(spec), default_of(spec), meaning_of(spec)});
}

std::vector<KeySection> sections() {
  std::vector<KeySection> out;
  {
    KeySection s{"Top level", "", {}};
    add_specs(s, "", top_level_param_specs());
    for (const auto& name : scenario_sections())
      s.rows.push_back({name, "mapping", name == "platform" || name == "algorithm" ? "required" : "-",
                        "see its section below"});
    s.rows.push_back(
        {"sweep", "mapping", "-", "makes the file a sweep (`aggsim sweep run`): see its section below"});
    out.push_back(std::move(s));
  }
  {
    KeySection s{"platform", "Either `file` or `topology` (with that topology's keys below).", {}};
    add_specs(s, "platform.", platform_param_specs());
    add_specs(s, "platform.overrides[].", override_selector_param_specs());
    add_specs(s, "platform.overrides[].", override_param_specs());
    out.push_back(std::move(s));
  }
  for (const auto& t : topology_table()) {
    KeySection s{fmt::format("platform: {{topology: {}}}", t.name), t.summary, {}};
    add_specs(s, "platform.", t.params);
    out.push_back(std::move(s));
  }
  {
    KeySection s{"model", "", {}};
    add_specs(s, "model.", model_param_specs());
    out.push_back(std::move(s));
  }
  {
    std::vector<std::string> names;
    for (const auto& a : algorithm_table()) names.push_back(a.name);
    KeySection s{"algorithm", "Keys every algorithm takes; each algorithm's own follow.", {}};
    s.rows.push_back(
        {"algorithm.name", "choice", "required",
         meaning_of(ParamSpec("name", ParamKind::choice, "", "the aggregation algorithm").one_of(names))});
    add_specs(s, "algorithm.", common_algorithm_param_specs());
    out.push_back(std::move(s));
  }
  for (const auto& a : algorithm_table()) {
    KeySection s{fmt::format("algorithm: {{name: {}}}", a.name), a.summary, {}};
    add_specs(s, "algorithm.", a.params);
    out.push_back(std::move(s));
  }
  {
    std::vector<std::string> names;
    for (const auto& c : compressor_table()) names.push_back(c.name);
    KeySection s{"compression", "Absent: no compression (`none`).", {}};
    s.rows.push_back({"compression.name", "choice", "required",
                      meaning_of(ParamSpec("name", ParamKind::choice, "", "the compressor").one_of(names))});
    out.push_back(std::move(s));
  }
  for (const auto& c : compressor_table()) {
    KeySection s{fmt::format("compression: {{name: {}}}", c.name), c.summary, {}};
    add_specs(s, "compression.", c.params);
    out.push_back(std::move(s));
  }
  {
    KeySection s{"workload", "A training problem on the math plane; absent: synthetic gradients.", {}};
    add_specs(s, "workload.", workload_param_specs());
    out.push_back(std::move(s));
  }
  for (const auto& [name, specs] :
       std::vector<std::pair<std::string, std::vector<ParamSpec>>>{{"compute", compute_param_specs()},
                                                                   {"engine", engine_param_specs()},
                                                                   {"parallel", parallel_param_specs()},
                                                                   {"output", output_param_specs()}}) {
    KeySection s{name, "", {}};
    add_specs(s, name + ".", specs);
    out.push_back(std::move(s));
  }
  {
    KeySection s{"sweep", "Only in sweep files (scenarios/README.md).", {}};
    add_specs(s, "sweep.", sweep_param_specs());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::string key_reference_markdown() {
  std::string out =
      "# Scenario keys\n\n"
      "Generated by `aggsim list --keys --markdown` from the tables the scenario loader reads with; a "
      "test fails when this file differs from what aggsim prints. Sizes, bandwidths, durations and "
      "speeds take SimGrid's units (README, Scenario reference). `-`: no default (the key is absent "
      "unless given).\n";
  for (const auto& s : sections()) {
    out += fmt::format("\n## {}\n\n", s.title);
    if (!s.note.empty()) out += s.note + "\n\n";
    if (s.rows.empty()) {
      out += "No keys of its own.\n";
      continue;
    }
    out += "| key | type | default | meaning |\n| --- | --- | --- | --- |\n";
    for (const auto& r : s.rows)
      out += fmt::format("| `{}` | {} | {} | {} |\n", r.path, markdown_cell(r.type),
                         r.default_text == "-" ? "-" : "`" + markdown_cell(r.default_text) + "`",
                         markdown_cell(r.meaning));
  }
  return out;
}

std::string key_reference_text() {
  std::string out;
  for (const auto& s : sections()) {
    out += fmt::format("{}{}{}\n", out.empty() ? "" : "\n", s.title, s.note.empty() ? "" : ": " + s.note);
    if (s.rows.empty()) out += "  (no keys of its own)\n";
    for (const auto& r : s.rows)
      out += fmt::format("  {:<36} {:<16} {:<10} {}\n", r.path, r.type, r.default_text, r.meaning);
  }
  return out;
}

}  // namespace aggsim::cli
