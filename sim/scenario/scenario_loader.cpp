#include "sim/scenario/scenario_loader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "algorithms/registry.hpp"
#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"
#include "sim/core/strings.hpp"
#include "sim/platform/endpoints.hpp"
#include "sim/platform/platform.hpp"
#include "sim/platform/platform_overrides.hpp"
#include "sim/platform/systems.hpp"
#include "sim/platform/topology.hpp"
#include "sim/scenario/calibration_key.hpp"
#include "sim/scenario/scenario_keys.hpp"
#include "sim/scenario/workload_loader.hpp"
#include "sim/scenario/yaml_reader.hpp"

namespace aggsim {

const char* network_preset_name(NetworkPreset preset) {
  switch (preset) {
    case NetworkPreset::lv08:
      return "lv08";
    case NetworkPreset::alpha_beta:
      return "alpha_beta";
    case NetworkPreset::ns3:
      return "ns3";
    case NetworkPreset::auto_by_fabric:
      return "auto";
  }
  return "?";
}

std::optional<NetworkPreset> find_network_preset(const std::string& name) {
  for (NetworkPreset p :
       {NetworkPreset::auto_by_fabric, NetworkPreset::lv08, NetworkPreset::alpha_beta, NetworkPreset::ns3})
    if (name == network_preset_name(p)) return p;
  return std::nullopt;
}

NetworkPreset effective_network(const Scenario& sc) {
  if (sc.network != NetworkPreset::auto_by_fabric) return sc.network;
  return sc.platform.fabric == Fabric::ethernet ? NetworkPreset::lv08 : NetworkPreset::alpha_beta;
}

namespace {

namespace fs = std::filesystem;

YAML::Node parse_document(const std::string& text, const std::string& label) {
  check_yaml_nesting(text, label);
  std::vector<std::string> keys = scenario_top_level_keys();
  keys.push_back("sweep");  // a sweep file given to run or validate is told so
  return parse_yaml(text, label, {"scenario", keys});
}

// Applies "a.b.c=value" by creating/replacing the key in the document tree.
void apply_override(YAML::Node& root, const std::string& text, YamlSource& source) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(fmt::format("--set {}: expected key.path=value", text));
  const std::string path = text.substr(0, eq), value_text = text.substr(eq + 1);
  YAML::Node value;
  check_yaml_nesting(value_text, "--set " + path);
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::ParserException& e) {
    throw InputError(fmt::format("--set {}: value is not valid YAML: {}", text, e.msg));
  }
  check_duplicate_keys(value, "--set " + text, path);
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string part; std::getline(ss, part, '.');) {
    if (part.empty()) throw InputError(fmt::format("--set {}: empty key in '{}'", text, path));
    parts.push_back(part);
  }
  YAML::Node cur = root;
  std::string walked;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += (walked.empty() ? "" : ".") + parts[i];
    YAML::Node next = cur[parts[i]];
    if (!next || next.IsNull()) {
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = cur[parts[i]];
    } else if (!next.IsMap()) {
      throw InputError(fmt::format("--set {}: '{}' is not a mapping", text, walked));
    }
    cur.reset(next);
  }
  cur[parts.back()] = value;
  source.overrides[path] = text;
}

// A generator's key beside `file:` (often a --set platform.bandwidth=... on a scenario whose platform
// is an XML file) cannot change the file: says so, instead of "unknown key".
void reject_generator_keys(const YamlMap& platform, const std::string& file) {
  const YAML::Node& node = platform.value().node();
  if (node["overrides"])
    platform.value()
        .child("overrides")
        .fail(fmt::format("the platform is the file {}: overrides apply only to generated platforms "
                          "('platform: {{topology: ...}}'); edit the XML instead (a host's speed, a "
                          "link's bandwidth and latency)",
                          file));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    for (const auto& topology : topology_table())
      for (const auto& group : group_params(topology.params)) {
        const bool generator_key = group.prefix.empty()
                                       ? std::any_of(group.specs.begin(), group.specs.end(),
                                                     [&](const ParamSpec& s) { return s.key == key; })
                                       : group.prefix == key;
        if (generator_key)
          platform.value().child(key).fail(fmt::format(
              "the platform is the file {}: generated-platform keys such as '{}' apply only to "
              "'platform: {{topology: ...}}' (change the XML file, or give a topology instead of the file)",
              file, key));
      }
  }
}

// A misspelt generator key beside `file:` (`--grid platform.bandwdith=...` on an XML platform):
// " (did you mean 'bandwidth'? a key of generated platforms; the platform is the file F)", or "".
std::string near_generator_key(const std::string& key, const std::string& file) {
  std::set<std::string> keys;
  for (const auto& topology : topology_table())
    for (const auto& group : group_params(topology.params)) {
      if (!group.prefix.empty()) keys.insert(group.prefix);
      for (const auto& spec : group.specs)
        if (group.prefix.empty()) keys.insert(spec.key);
    }
  keys.insert("overrides");
  const std::string near = closest_name(key, {keys.begin(), keys.end()});
  if (near.empty()) return "";
  return fmt::format(
      " (did you mean '{}'? a key of generated platforms, 'platform: {{topology: ...}}'; this "
      "platform is the file {}: change the XML instead)",
      near, file);
}

// "unknown algorithm 'rign_allreduce' (did you mean 'ring_allreduce'?) (available: a | b | ...)"
template <class Table>
std::string unknown_name(const std::string& what, const std::string& given, const Table& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.push_back(entry.name);
  return fmt::format("unknown {} '{}'{} (available: {})", what, given, did_you_mean_name(given, names),
                     fmt::join(names, " | "));
}

// The keys a mapping `algorithm:` or `compression:` takes for one entry: its name and its parameters
// (a nested group such as `graph:` counts as one key).
std::set<std::string> keys_taken(const std::vector<ParamSpec>& specs) {
  std::set<std::string> keys = {"name"};
  for (const auto& group : group_params(specs)) {
    if (!group.prefix.empty()) {
      keys.insert(group.prefix);
      continue;
    }
    for (const auto& spec : group.specs) keys.insert(spec.key);
  }
  return keys;
}

// Where a key that `chosen` does not take belongs among the other entries of `table` (algorithms or
// compressors): " ('rank' is a key of compressor powersgd | atomo, not of topk)" for another entry's
// key, " (did you mean 'rank', a key of ...?)" for a near spelling of one, else "".
template <class Table>
std::string key_of_others(const std::string& key, const Table& table, const char* what,
                          const std::string& chosen) {
  const auto owners_of = [&](const std::string& k) {
    std::vector<std::string> owners;
    for (const auto& entry : table)
      if (entry.name != chosen && keys_taken(entry.params).count(k)) owners.push_back(entry.name);
    return owners;
  };
  if (const auto owners = owners_of(key); !owners.empty())
    return fmt::format(" ('{}' is a key of {} {}, not of {})", key, what, fmt::join(owners, " | "), chosen);
  std::set<std::string> keys;
  for (const auto& entry : table)
    if (entry.name != chosen)
      for (const auto& k : keys_taken(entry.params))
        if (k != "name") keys.insert(k);
  const std::string near = closest_name(key, {keys.begin(), keys.end()});
  if (near.empty()) return "";
  return fmt::format(" (did you mean '{}', a key of {} {}, not of {}?)", near, what,
                     fmt::join(owners_of(near), " | "), chosen);
}

// The keys `section:` takes when its name is `name` (common algorithm keys included); empty when
// the name is unknown.
std::set<std::string> keys_taken_by(const std::string& section, const std::string& name) {
  if (section == "compression") {
    const CompressorInfo* info = find_compressor(name);
    return info ? keys_taken(info->params) : std::set<std::string>{};
  }
  const AlgorithmInfo* info = find_algorithm(name);
  if (!info) return {};
  std::set<std::string> keys = keys_taken(info->params);
  for (const auto& key : keys_taken(common_algorithm_param_specs())) keys.insert(key);
  return keys;
}

constexpr const char* kChoiceSections[] = {"algorithm", "compression"};

// `section.name` as the file gives it ("" when absent or not a single value).
std::string chosen_name(const YAML::Node& doc, const std::string& section) {
  const YAML::Node& map = doc[section];
  if (!map || !map.IsMap()) return "";
  const YAML::Node& name = map["name"];
  return name && name.IsScalar() ? name.Scalar() : "";
}

// An override of `algorithm.name` or `compression.name` drops the file's keys that the file's own
// choice takes and the new one does not, reporting each. A key an override gives itself is never
// dropped (unknown to the new choice, it stays an error), nor is a key the file's choice does not
// take either (a misspelling stays an error too).
std::vector<DroppedKey> drop_keys_of_old_choices(YAML::Node& doc,
                                                 const std::map<std::string, std::string>& file_names,
                                                 const std::shared_ptr<const YamlSource>& source) {
  std::vector<DroppedKey> dropped;
  for (const std::string section : kChoiceSections) {
    const auto set_name = source->overrides.find(section + ".name");
    const auto file_name = file_names.find(section);
    if (set_name == source->overrides.end() || file_name == file_names.end()) continue;
    const std::string new_name = chosen_name(doc, section);
    const std::set<std::string> old_keys = keys_taken_by(section, file_name->second);
    const std::set<std::string> new_keys = keys_taken_by(section, new_name);
    if (old_keys.empty() || new_keys.empty()) continue;  // an unknown name is reported by the reader
    YAML::Node map = doc[section];
    std::vector<std::string> leave_out;
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      const std::string key = it->first.Scalar(), path = section + "." + key;
      const auto& overrides = source->overrides;
      const bool overridden = std::any_of(overrides.begin(), overrides.end(), [&](const auto& o) {
        return o.first == path || o.first.rfind(path + ".", 0) == 0;
      });
      if (new_keys.count(key) || !old_keys.count(key) || overridden) continue;
      dropped.push_back({path, YamlValue(it->first, path, source).location(), set_name->second,
                         section == "compression" ? "compressor" : "algorithm", new_name, ""});
      leave_out.push_back(key);
    }
    for (const auto& key : leave_out) map.remove(key);
  }
  return dropped;
}

// `model.size` and `model.layers` are alternatives: an override of one drops the file's other (and
// `batch`, which only layers take), reporting each, unless an override gives that key too.
void drop_replaced_model_keys(YAML::Node& doc, const std::shared_ptr<const YamlSource>& source,
                              std::vector<DroppedKey>& dropped) {
  YAML::Node model = doc["model"];
  if (!model || !model.IsMap()) return;
  const auto& overrides = source->overrides;
  const auto set = [&](const std::string& key) { return overrides.count("model." + key) > 0; };
  const auto drop = [&](const std::string& key, const std::string& by, const std::string& reason) {
    if (!model[key] || set(key)) return;
    YAML::Node name;
    for (auto it = model.begin(); it != model.end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == key) name = it->first;
    dropped.push_back({"model." + key, YamlValue(name, "model." + key, source).location(),
                       overrides.at("model." + by), "", "", reason});
    model.remove(key);
  };
  if (set("layers") && !set("size")) drop("size", "layers", "the layer table given instead sets the size");
  if (set("size") && !set("layers")) {
    drop("layers", "size", "the size given instead replaces the layer table");
    drop("batch", "size", "only a layer table takes it");
  }
}

// `platform.overrides`: a list of {hosts | nodes, and values}, each checked here; whether the hosts and
// nodes exist is checked against the platform's shape by the caller.
std::vector<PlatformOverride> read_overrides(const YamlValue& list) {
  if (!list.node().IsSequence())
    list.fail(
        "expected a list of entries, e.g. [{hosts: \"host-3\", bandwidth: 1Gbps}, {nodes: \"0-1\", speed: "
        "50Tf}]");
  std::vector<PlatformOverride> out;
  for (std::size_t i = 0; i < list.node().size(); ++i) {
    YamlMap entry(list.item(i));
    PlatformOverride o;
    auto hosts = entry.get("hosts");
    auto nodes = entry.get("nodes");
    o.values = entry.params(override_param_specs());
    entry.finish();
    if (hosts && nodes) nodes->fail("give either 'hosts' or 'nodes', not both");
    if (!hosts && !nodes)
      entry.value().fail(
          "needs a selector: 'hosts: NAMES' (e.g. \"node-3-gpu-[0-7]\") or 'nodes: INDICES' (e.g. "
          "\"0-3,7\")");
    const YamlValue& selector = hosts ? *hosts : *nodes;
    o.selector = hosts ? PlatformOverride::Selector::hosts : PlatformOverride::Selector::nodes;
    if (selector.node().IsSequence()) {
      for (std::size_t k = 0; k < selector.node().size(); ++k) o.items.push_back(selector.item(k).scalar());
      if (o.items.empty()) selector.fail("must not be an empty list");
    } else {
      o.items.push_back(selector.scalar());
    }
    if (o.values.all().empty())
      entry.value().fail(
          "gives no value: add speed, bandwidth, latency, nic_bandwidth, intra_bandwidth or "
          "intra_latency");
    out.push_back(std::move(o));
  }
  return out;
}

// A generated platform's keys: the generator's, each defaulting to the named system's value when
// there is one (keys the scenario gives win), decoded once.
void read_generated_platform(YamlMap& map, PlatformSpec& spec, const SystemInfo* system) {
  const TopologyInfo* info = spec.generator;
  std::vector<ParamSpec> specs = info->params;
  if (system)
    for (ParamSpec& param : specs)
      for (const auto& [key, value] : system->values)
        if (param.key == key) param.default_text = value;
  spec.params = map.params(specs);
  auto overrides = map.get("overrides");
  if (overrides) spec.overrides = read_overrides(*overrides);
  try {
    decode_generated_platform(spec);
  } catch (const OverrideError& e) {
    const YamlValue entry = overrides->item(e.entry);
    const YamlValue at = entry.node()[e.key] ? entry.child(e.key) : entry;
    at.fail(e.what());
  } catch (const std::invalid_argument& e) {
    map.value().fail(e.what());
  }
}

PlatformSpec read_platform(YamlMap& top, const std::string& scenario_file) {
  PlatformSpec spec;
  YamlMap map(top.require("platform"));
  auto file = map.get("file");
  auto topology = map.get("topology");
  auto system_key = map.get("system");
  if (file && topology) file->fail("give either a platform file or a topology generator, not both");
  if (file && system_key)
    system_key->fail("a named system is generated: give either system or file, not both");
  const SystemInfo* system = nullptr;
  if (system_key) {
    system = find_system(system_key->scalar());
    if (!system)
      system_key->fail(unknown_name("system", system_key->scalar(), system_table()) +
                       "; each with its values: aggsim list --systems");
    spec.system = system->name;
  }
  auto fabric = map.get("fabric");
  if (fabric || system) {
    try {
      spec.fabric = parse_fabric(fabric ? fabric->scalar() : system->fabric);
    } catch (const std::invalid_argument& e) {
      fabric->fail(e.what());
    }
  }
  if (file) {
    spec.file = find_input_file(*file, "platform", scenario_file, DataKind::platform);
    reject_generator_keys(map, spec.file);
    if (!fabric) spec.fabric = xml_declared(spec.file).fabric;
  } else if (topology || system) {
    spec.topology = topology ? topology->scalar() : kSystemTopology;
    spec.generator = find_topology(spec.topology);
    if (!spec.generator) topology->fail(unknown_name("topology", spec.topology, topology_table()));
    read_generated_platform(map, spec, system);
  } else {
    map.value().fail(
        "needs 'file: PLATFORM.xml', 'topology: cluster | fat_tree | torus | dragonfly' or 'system: NAME' "
        "(aggsim list --systems)");
  }
  map.finish(
      [&](const std::string& key) { return file ? near_generator_key(key, spec.file) : std::string(); });
  return spec;
}

// Too many ranks for a generated platform: what it has, and the ways out, naming the key to change.
std::string ranks_do_not_fit(const Scenario& sc, std::int64_t hosts) {
  const TopologyInfo& info = *sc.platform.generator;
  const Params& p = sc.platform.params;
  const std::int64_t gpus = sc.platform.shape.gpus_per_node;
  const std::string bigger = sc.platform.shape.sized_by_hosts
                                 ? fmt::format("platform.hosts: {}", sc.ranks)
                                 : fmt::format("platform.nodes: {}", (sc.ranks + gpus - 1) / gpus);
  // Shape keys given (torus dimensions, fat-tree down/up, dragonfly groups, ...) must follow the size.
  std::string shape;
  for (const auto& spec : info.params)
    if ((spec.kind == ParamKind::integer || spec.kind == ParamKind::integer_list) &&
        spec.default_text.empty() && spec.key != "nodes" && spec.key != "hosts" && p.has(spec.key))
      shape += (shape.empty() ? "" : ", ") + spec.key;
  if (!shape.empty()) shape = fmt::format(", with {} to match", shape);
  return fmt::format(
      "{} ranks do not fit on the {} hosts of this {} platform: use ranks: {} or fewer, a bigger generated "
      "platform ({}{}), or a platform XML file with at least {} hosts (platform: {{file: ...}})",
      sc.ranks, hosts, sc.platform.topology, hosts, bigger, shape, sc.ranks);
}

// The value under a dotted key ("graph.edges"), or the deepest mapping on its way that exists
// (a defaulted key has no place in the file). Recursive: assigning a YAML::Node would rewrite it.
YamlValue value_at_key(const YamlValue& map, const std::string& key) {
  const auto dot = key.find('.');
  const std::string head = key.substr(0, dot);
  if (!map.is_map() || !map.node()[head]) return map;
  if (dot == std::string::npos) return map.child(head);
  return value_at_key(map.child(head), key.substr(dot + 1));
}

// algorithm.every against the run: some step must aggregate, and an asynchronous scheme has no
// step to skip (its ranks already run ahead, pushing or gossiping as they go; sim/workload/README.md).
void check_every(YamlMap& alg, const Scenario& sc) {
  const int every = sc.algorithm.every;
  if (every == 1) return;
  const Params& p = sc.algorithm.params;
  if (every > sc.steps)
    alg.get("every")->fail(
        fmt::format("{} is more than steps ({}): no step would aggregate", every, sc.steps));
  if (p.has("asynchronous") && p.boolean("asynchronous"))
    alg.get("every")->fail(fmt::format(
        "{} with asynchronous: true is not modelled (asynchronous ranks already run ahead and their "
        "staleness bound counts exchanges); use asynchronous: false, or leave every out",
        every));
}

// granularity: layer, refused where the algorithm cannot run one bucket per layer under its
// parameters (AlgorithmInfo::layer_granularity_refusal).
void check_granularity(YamlMap& alg, const Scenario& sc) {
  const AlgorithmInfo* entry = sc.algorithm.entry;
  if (sc.algorithm.granularity != Granularity::layer || !entry || !entry->layer_granularity_refusal) return;
  if (const std::string why = entry->layer_granularity_refusal(sc.algorithm.params); !why.empty())
    alg.get("granularity")->fail(why);
}

// name, seed, ranks and steps.
void read_run_size(YamlMap& top, Scenario& sc, const std::string& file) {
  const Params given = top.params(top_level_param_specs());
  sc.name = given.has("name") ? given.text("name") : fs::path(file).stem().string();
  if (sc.name.empty() || sc.name.find('/') != std::string::npos || sc.name == "." || sc.name == "..")
    top.value().fail("name: must be a plain, non-empty name usable as a folder name");
  sc.seed = static_cast<std::uint64_t>(given.integer("seed"));
  sc.ranks = static_cast<int>(given.integer("ranks"));
  sc.steps = static_cast<int>(given.integer("steps"));
  sc.network = find_network_preset(given.text("network")).value_or(NetworkPreset::auto_by_fabric);
  if (auto ranks = top.get("ranks")) sc.key_locations["ranks"] = ranks->location();
}

// The platform, and whether the ranks fit on a generated one.
void read_platform_section(YamlMap& top, Scenario& sc, const std::string& file) {
  sc.platform = read_platform(top, file);
  if (auto platform = top.get("platform")) sc.key_locations["platform"] = platform->location();
  if (sc.platform.topology.empty()) return;
  const auto hosts = sc.platform.shape.hosts();
  if (sc.ranks > hosts) {
    const auto ranks = top.get("ranks");
    const YamlValue& at = ranks ? *ranks : top.value();
    at.fail(ranks_do_not_fit(sc, hosts));
  }
  // Hosts no rank runs on still cost their memory and their build time (4,194,304 hosts for 8 ranks
  // took 3 GB and 17 s before the run could start).
  const std::int64_t allowed = std::max<std::int64_t>(kMinGeneratedHosts, kGeneratedHostsPerRank * sc.ranks);
  if (hosts > allowed)
    value_at_key(top.value(), sc.platform.shape.sized_by_hosts ? "platform.hosts" : "platform.nodes")
        .fail(fmt::format("the platform has {} hosts for {} ranks: aggsim generates at most {} hosts per rank "
                          "(or {} in all, whatever the ranks); size it for the ranks that run",
                          hosts, sc.ranks, kGeneratedHostsPerRank, kMinGeneratedHosts));
}

// The network preset against the platform, then the calibration that may replace its factors.
void check_network(YamlMap& top, Scenario& sc) {
  if (auto v = top.get("network")) {
    // SimGrid 3.32 hands ns-3 only one-link routes: generators that route inside their zone cannot run there.
    if (sc.network == NetworkPreset::ns3 && !sc.platform.topology.empty() &&
        !sc.platform.generator->build_ns3)
      v->fail(
          fmt::format("ns3 cannot simulate topology {} (SimGrid 3.32 gives ns-3 only one-link routes); "
                      "use topology cluster, or network lv08 | alpha_beta",
                      sc.platform.topology));
  }
  if (auto v = top.get("calibration")) {
    sc.key_locations["calibration"] = v->location();
    read_calibration_key(*v, sc, top.get("network").has_value());
  }
}

// The algorithm's entry, its common keys and its own parameters, one key at a time.
void read_algorithm_section(YamlMap& top, Scenario& sc) {
  YamlMap alg(top.require("algorithm"));
  auto name = alg.require("name");
  sc.algorithm.name = name.scalar();
  const AlgorithmInfo* info = find_algorithm(sc.algorithm.name);
  if (!info) name.fail(unknown_name("algorithm", sc.algorithm.name, algorithm_table()));
  sc.algorithm.entry = info;
  sc.key_locations["algorithm.name"] = name.location();
  read_common_algorithm_keys(alg, sc.algorithm, info->consensus);
  sc.algorithm.params = alg.params(info->params);
  check_every(alg, sc);
  check_granularity(alg, sc);
  // A nested key ("graph.kind", of the mapping `graph:`) is not looked up here: getting it would
  // accept it written flat, `graph.kind: torus`, and ignore it.
  for (const auto& spec : info->params)
    if (spec.key.find('.') == std::string::npos)
      if (auto v = alg.get(spec.key)) sc.key_locations["algorithm." + spec.key] = v->location();
  alg.finish(
      [&](const std::string& key) { return key_of_others(key, algorithm_table(), "algorithm", info->name); });
}

// The compressor's entry and parameters (`none` when the section is absent), and the transport that
// carries its payloads on the algorithm.
void read_compression_section(YamlMap& top, Scenario& sc) {
  if (auto compression = top.get("compression")) {
    YamlMap comp(*compression);
    auto name = comp.require("name");
    sc.compression.name = name.scalar();
    const CompressorInfo* info = find_compressor(sc.compression.name);
    if (!info) name.fail(unknown_name("compressor", sc.compression.name, compressor_table()));
    sc.compression.entry = info;
    sc.compression.params = comp.params(info->params);
    sc.key_locations["compression"] = compression->location();
    try {
      memory_for(sc.compression.params);  // refuses contradicting memory keys here, at the key
    } catch (const ParamError& e) {
      comp.get(e.key)->fail(e.what());
    }
    comp.finish([&](const std::string& key) {
      return key_of_others(key, compressor_table(), "compressor", info->name);
    });
  }
  if (!sc.compression.entry) sc.compression.entry = find_compressor("none");
  sc.compression.transport = &transport_for(*sc.algorithm.entry, *sc.compression.entry);
}

// A sharded schedule (AlgorithmRun::sharding) has units instead of DDP's buckets and updates each
// rank's shard of the gradient: the common keys it cannot honour are refused where they are written.
void check_sharded_schedule(YamlMap& top, const Scenario& sc, const AlgorithmRun& run) {
  if (!run.sharding) return;
  const auto refuse = [&](const char* key, const std::string& why) {
    value_at_key(top.value().child("algorithm"), key)
        .fail(fmt::format("{}: {} shards parameters unit by unit: {}", key, sc.algorithm.name, why));
  };
  if (sc.algorithm.apply_to == ApplyTo::weights)
    refuse("apply_to", "it reduces gradients (leave apply_to at gradients)");
  if (sc.algorithm.every > 1) refuse("every", "every step aggregates (leave every at 1)");
  if (const YamlValue alg = top.value().child("algorithm"); alg.is_map() && alg.node()["bucket"])
    refuse("bucket", "its units are set by its own key `unit`, not by DDP's buckets");
}

// The algorithm's checks of its parameters as a whole (a graph, the op, the compressor), then the
// transport's check of the pairing: the prepare stage `run` goes through, here without the platform
// (built later, when the checks that need it run too). The run takes this stage when it read
// nothing of the platform (PreparedAtLoad).
void check_algorithm_pairing(YamlMap& top, Scenario& sc) {
  auto loaded = std::make_shared<PreparedAtLoad>();
  loaded->config = algorithm_config(sc);
  const AlgorithmConfig& config = loaded->config;
  try {
    loaded->run = prepare_run(config);
    check_sharded_schedule(top, sc, *loaded->run);
    if (sc.compression.transport->check) sc.compression.transport->check(config);
    // Pieces that pay their route's latency themselves run with a latency factor of 0, which
    // SimGrid 3.32's ns-3 model does not take (it aborts the run with "Feature unimplemented").
    if (sc.network == NetworkPreset::ns3 && loaded->run->pieces_pay_latency) {
      const bool chunk = sc.algorithm.params.has("movement") && sc.algorithm.params.text("movement") == "chunk";
      value_at_key(top.value(), "network")
          .fail(fmt::format("ns3 cannot run {}{}: its pieces charge their route's latency themselves, which "
                            "SimGrid's ns-3 model does not allow; use network auto | lv08 | alpha_beta{}",
                            sc.algorithm.name, chunk ? " with movement: chunk" : "",
                            chunk ? ", or movement: flow" : ""));
    }
    sc.prepared_at_load = std::move(loaded);
  } catch (const ParamError& e) {
    if (auto compression = top.get("compression"); e.key == "compression" && compression)
      compression->fail(e.what());
    if (e.key.rfind("model.", 0) == 0) value_at_key(top.value(), scenario_key_of(sc, e.key)).fail(e.what());
    value_at_key(top.value().child("algorithm"), e.key).fail(e.what());
  }
}

// parallel.*: the layout must cut the ranks into equal data-parallel groups and the layer table into
// its pipeline stages (a layer at least each; a model known only by its size is cut evenly).
void read_parallel(YamlMap& top, Scenario& sc) {
  const auto v = top.get("parallel");
  if (!v) return;
  YamlMap map(*v);
  map.expect(spec_keys(parallel_param_specs()));
  map.finish();
  const Params p = map.params(parallel_param_specs());
  map.finish();
  sc.parallel.tensor = static_cast<int>(p.integer("tensor"));
  sc.parallel.pipeline = static_cast<int>(p.integer("pipeline"));
  const auto at = [&](const char* key) { return map.get(key) ? *map.get(key) : *v; };
  if (sc.ranks % sc.parallel.groups() != 0)
    at(map.get("tensor") ? "tensor" : "pipeline")
        .fail(fmt::format("tensor {} x pipeline {} does not divide the {} ranks into equal data-parallel groups "
                          "(ranks must be a multiple of {})",
                          sc.parallel.tensor, sc.parallel.pipeline, sc.ranks, sc.parallel.groups()));
  if (const auto layers = static_cast<int>(sc.model.layers.size()); layers > 0 && sc.parallel.pipeline > layers)
    at("pipeline").fail(fmt::format("{} pipeline stages need a layer each, and the model's layer table has {}",
                                    sc.parallel.pipeline, layers));
  sc.key_locations["parallel"] = v->location();
}

// With the math plane on, each data-parallel group aggregates a slice of the proxy parameter vector
// (the workload's, known once the training is read): there must be one for each.
void check_parallel_slices(YamlMap& top, const Scenario& sc) {
  if (!sc.model.math || sc.model.proxy_dim >= sc.parallel.groups()) return;
  value_at_key(top.value(), "parallel")
      .fail(fmt::format("{} data-parallel groups each aggregate a slice of the math plane's {} parameters: use "
                        "a larger model.proxy_dim or workload (or model.math: off)",
                        sc.parallel.groups(), sc.model.proxy_dim));
}

// engine.* and output.*: both sections' keys (and defaults) are their specs'.
void read_run_settings(YamlMap& top, Scenario& sc) {
  const auto read_section = [&](const char* section, const std::vector<ParamSpec>& specs) {
    const auto v = top.get(section);
    if (!v) return default_params(specs);
    YamlMap map(*v);
    map.expect(spec_keys(specs));
    map.finish();
    const Params p = map.params(specs);
    map.finish();
    return p;
  };
  sc.engine.replay = read_section("engine", engine_param_specs()).boolean("replay");
  const Params output = read_section("output", output_param_specs());
  if (output.has("dir")) sc.output.dir = output.text("dir");
  sc.output.trace = output.boolean("trace");
}

Scenario read_scenario(const YAML::Node& doc, std::shared_ptr<YamlSource> source) {
  Scenario sc;
  sc.source_file = source->file;
  YamlMap top(YamlValue(doc, "", source));
  // A misspelt key is the likeliest mistake and explains later ones: report it first.
  top.expect(scenario_top_level_keys());
  top.finish();
  read_run_size(top, sc, source->file);
  read_platform_section(top, sc, source->file);
  check_network(top, sc);
  read_model(top.get("model"), sc.model, source->file);
  if (auto model = top.get("model"); model && model->is_map())  // for checks of the size against the platform
    for (const std::string key : {"size", "layers"})
      if (model->node()[key]) sc.key_locations["model." + key] = model->child(key).location();
  read_parallel(top, sc);
  read_algorithm_section(top, sc);
  check_calibration_family(sc);
  read_compression_section(top, sc);
  check_algorithm_pairing(top, sc);
  read_training(top, sc);
  check_parallel_slices(top, sc);
  check_math_memory(top, sc);
  check_step_memory(top, sc);
  read_run_settings(top, sc);
  top.finish();
  return sc;
}

// A --set value listing several values (`platform.bandwidth=10Gbps,100Gbps`) that its key refused as
// a value asks for a sweep: the message says how to run one.
void add_sweep_hint(const InputError& e, const std::string& file, const std::vector<std::string>& overrides) {
  const std::string message = e.what();
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos) continue;
    const std::string value = o.substr(eq + 1);
    if (split_flow_list(value).size() < 2 || message.find("'" + value + "'") == std::string::npos) continue;
    throw InputError(
        fmt::format("{}; --set takes one value: to run each of them, sweep the key: aggsim sweep "
                    "run {} --grid {}",
                    message, file, o));
  }
}

Scenario load_from(const std::string& text, const std::string& label,
                   const std::vector<std::string>& overrides, bool sweep_file = false) {
  auto source = std::make_shared<YamlSource>();
  source->file = label;
  check_utf8(text, label);
  for (const auto& o : overrides) {
    try {
      check_utf8(o, "--set");
    } catch (const InputError&) {
      throw InputError(fmt::format("--set {}: the value is not valid UTF-8", o.substr(0, o.find('='))));
    }
  }
  YAML::Node doc = parse_document(text, label);
  if (sweep_file) {
    doc.remove("sweep");
  } else if (doc["sweep"]) {
    YamlValue(doc["sweep"], "sweep", source).fail("this is a sweep file: run it with 'aggsim sweep run'");
  }
  std::map<std::string, std::string> file_names;  // the file's own choices, before any override
  for (const std::string section : kChoiceSections)
    if (const std::string name = chosen_name(doc, section); !name.empty()) file_names[section] = name;
  for (const auto& o : overrides) apply_override(doc, o, *source);
  std::vector<DroppedKey> dropped = drop_keys_of_old_choices(doc, file_names, source);
  drop_replaced_model_keys(doc, source, dropped);
  Scenario sc;
  try {
    sc = read_scenario(doc, source);
  } catch (const InputError& e) {
    if (!sweep_file) add_sweep_hint(e, label, overrides);
    throw;
  }
  sc.dropped_keys = std::move(dropped);
  return sc;
}

}  // namespace

std::vector<std::string> scenario_top_level_keys() {
  std::vector<std::string> known = spec_keys(top_level_param_specs());
  known.insert(known.end(), scenario_sections().begin(), scenario_sections().end());
  return known;
}

Scenario load_sweep_point_text(const std::string& text, const std::string& label,
                               const std::vector<std::string>& overrides) {
  return load_from(text, label, overrides, true);
}

Scenario load_scenario(const std::string& file, const std::vector<std::string>& overrides) {
  return load_from(read_input_file(file, "scenario"), file, overrides);
}

Scenario load_scenario_text(const std::string& text, const std::string& label,
                            const std::vector<std::string>& overrides) {
  return load_from(text, label, overrides);
}

std::string scenario_key_of(const Scenario& sc, const std::string& param_key) {
  if (param_key == "compression") return param_key;
  if (param_key == "model.size") return sc.model.layers_file.empty() ? param_key : "model.layers";
  return "algorithm." + param_key;
}

AlgorithmConfig algorithm_config(const Scenario& sc) {
  AlgorithmConfig config;
  config.model_bytes = sc.model.size_bytes;
  config.algorithm = sc.algorithm.entry;
  config.op = sc.algorithm.op;
  config.params = sc.algorithm.params;
  config.world = sc.ranks / sc.parallel.groups();  // one data-parallel group
  config.math = sc.model.math;
  if (sc.calibration) config.calibration = run_calibration(*sc.calibration);
  config.seed = sc.seed;
  config.compressor = sc.compression.entry;
  config.compressor_params = sc.compression.params;
  return config;
}

std::string describe_dropped_key(const DroppedKey& d) {
  if (!d.reason.empty()) return fmt::format("{} ({}) dropped: {}", d.key, d.location, d.reason);
  return fmt::format("{} ({}) dropped: {} {} does not take it", d.key, d.location, d.kind, d.new_name);
}

void print_dropped_keys(const Scenario& sc) {
  for (const auto& d : sc.dropped_keys)
    fmt::print(stderr, "aggsim: note: --set {}: {}\n", d.choice, describe_dropped_key(d));
}

std::string resolved_yaml(const Scenario& sc) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << sc.name;
  out << YAML::Key << "seed" << YAML::Value << sc.seed;
  out << YAML::Key << "ranks" << YAML::Value << sc.ranks;
  out << YAML::Key << "steps" << YAML::Value << sc.steps;
  out << YAML::Key << "platform" << YAML::Value << YAML::BeginMap;
  if (!sc.platform.file.empty()) {
    out << YAML::Key << "file" << YAML::Value << sc.platform.file;
    out << YAML::Key << "fabric" << YAML::Value << fabric_name(sc.platform.fabric);
  } else {
    out << YAML::Key << "topology" << YAML::Value << sc.platform.topology;
    if (!sc.platform.system.empty()) out << YAML::Key << "system" << YAML::Value << sc.platform.system;
    emit_params(out, sc.platform.generator->params, sc.platform.params);
    out << YAML::Key << "fabric" << YAML::Value << fabric_name(sc.platform.fabric);
    if (!sc.platform.overrides.empty()) {
      out << YAML::Key << "overrides" << YAML::Value << YAML::BeginSeq;
      for (const auto& o : sc.platform.overrides) {
        out << YAML::Flow << YAML::BeginMap;
        out << YAML::Key << (o.selector == PlatformOverride::Selector::hosts ? "hosts" : "nodes")
            << YAML::Value;
        if (o.items.size() == 1)
          out << o.items.front();
        else
          out << YAML::Flow << o.items;
        emit_params(out, override_param_specs(), o.values);
        out << YAML::EndMap;
      }
      out << YAML::EndSeq;
    }
  }
  out << YAML::EndMap;
  out << YAML::Key << "network" << YAML::Value << network_preset_name(sc.network);
  if (sc.calibration) out << YAML::Key << "calibration" << YAML::Value << sc.calibration->file;
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  if (sc.model.layers_file.empty())
    out << YAML::Key << "size" << YAML::Value << fmt::format("{}B", sc.model.size_bytes);
  emit_model_layers(out, sc.model);
  out << YAML::Key << "proxy_dim" << YAML::Value << sc.model.proxy_dim;
  out << YAML::Key << "math" << YAML::Value << (sc.model.math ? "on" : "off");
  out << YAML::EndMap;
  out << YAML::Key << "algorithm" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << sc.algorithm.name;
  out << YAML::Key << "op" << YAML::Value << reduce_kind_name(sc.algorithm.op.kind);
  if (sc.algorithm.op.kind == ReduceKind::custom_avg)
    out << YAML::Key << "denominator" << YAML::Value << fmt::format("{}", sc.algorithm.op.denominator);
  emit_params(out, sc.algorithm.entry->params, sc.algorithm.params);
  emit_aggregation_scope(out, sc.algorithm);
  out << YAML::EndMap;
  out << YAML::Key << "compression" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << sc.compression.name;
  emit_params(out, sc.compression.entry->params, sc.compression.params);
  out << YAML::EndMap;
  emit_training(out, sc);
  if (sc.parallel.groups() > 1)
    out << YAML::Key << "parallel" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "tensor"
        << YAML::Value << sc.parallel.tensor << YAML::Key << "pipeline" << YAML::Value << sc.parallel.pipeline
        << YAML::EndMap;
  if (!sc.engine.replay)
    out << YAML::Key << "engine" << YAML::Value << YAML::BeginMap << YAML::Key << "replay" << YAML::Value
        << false << YAML::EndMap;
  if (!sc.output.dir.empty() || sc.output.trace) {
    out << YAML::Key << "output" << YAML::Value << YAML::BeginMap;
    if (!sc.output.dir.empty()) out << YAML::Key << "dir" << YAML::Value << sc.output.dir;
    if (sc.output.trace) out << YAML::Key << "trace" << YAML::Value << true;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace aggsim
