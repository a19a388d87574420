#include "sim/platform/host_facts.hpp"

#include <fmt/format.h>

#include <cctype>
#include <stdexcept>
#include <string>

#include "sim/core/error.hpp"

namespace aggsim {

namespace {

bool is_count(const std::string& value) {
  if (value.empty() || value.size() > 9) return false;
  for (char c : value)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// A number in (0, 1], written in full ("0.824").
bool is_share(const std::string& value) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == value.size() && v > 0 && v <= 1;
}

template <class E, std::size_t N>
std::string choice_error(const char* id, const std::string& value, const EnumNames<E, N>& names,
                         const char* meaning) {
  if (names.find(value)) return "";
  return fmt::format("{}: value=\"{}\" must be one of {} ({})", id, value, names.joined(), meaning);
}

// The facts of one host from its properties.
HostFacts parse_facts(const sg4::Host* host) {
  HostFacts f;
  for (const char* id : {kNodeProperty, kNicProperty, kIntraLinkProperty, kNvswitchProperty, kGpuNicPathProperty,
                         kGpuProperty, kNvlinkDomainProperty, kNvlinkEfficiencyProperty}) {
    const char* v = host->get_property(id);
    if (!v) continue;
    if (std::string error = host_property_error(id, v); !error.empty())
      throw InputError(fmt::format("host {}: property {}", host->get_name(), error));
    read_host_property(f, id, v);
  }
  return f;
}

// The facts travel with the host as a SimGrid extension, created when first asked for.
struct HostFactsExtension {
  HostFacts facts;
  static simgrid::xbt::Extension<sg4::Host, HostFactsExtension> EXTENSION_ID;
};
simgrid::xbt::Extension<sg4::Host, HostFactsExtension> HostFactsExtension::EXTENSION_ID;

}  // namespace

std::string host_property_error(const std::string& id, const std::string& value) {
  if (id == kNicProperty && !is_count(value))
    return fmt::format("{}: value=\"{}\" must be a NIC index (0, 1, ...)", id, value);
  if (id == kIntraLinkProperty)
    return choice_error(kIntraLinkProperty, value, kIntraLinkNames, "what the node's GPUs talk over");
  if (id == kNvswitchProperty && value != "true" && value != "false")
    return fmt::format("{}: value=\"{}\" must be true or false", id, value);
  if (id == kGpuNicPathProperty)
    return choice_error(kGpuNicPathProperty, value, kGpuNicPathNames,
                        "how the GPU reaches its NIC, in NCCL's path names");
  if (id == kGpuProperty) return choice_error(kGpuProperty, value, kGpuNames, "the GPU's generation");
  if (id == kNvlinkEfficiencyProperty && !is_share(value))
    return fmt::format("{}: value=\"{}\" must be a share of the port's rate, above 0 and at most 1", id, value);
  return "";
}

void read_host_property(HostFacts& f, const std::string& id, const std::string& value) {
  if (value.empty()) return;
  if (id == kNodeProperty) f.node = value;
  if (id == kNicProperty) f.nic = std::stoi(value);
  if (id == kIntraLinkProperty) f.intra_link = *kIntraLinkNames.find(value);
  if (id == kNvswitchProperty) f.nvswitch = value == "true";
  if (id == kGpuNicPathProperty) f.gpu_nic_path = *kGpuNicPathNames.find(value);
  if (id == kGpuProperty) f.gpu = kGpuNames.find(value);
  if (id == kNvlinkDomainProperty) f.nvlink_domain = value;
  if (id == kNvlinkEfficiencyProperty) f.nvlink_efficiency = std::stod(value);
}

const HostFacts& host_facts(const sg4::Host* host) {
  if (!HostFactsExtension::EXTENSION_ID.valid())
    HostFactsExtension::EXTENSION_ID = sg4::Host::extension_create<HostFactsExtension>();
  auto* cached = host->extension<HostFactsExtension>();
  if (!cached) {
    cached = new HostFactsExtension{parse_facts(host)};
    // Extendable's setter is not const, though the facts add nothing the host would change by.
    const_cast<sg4::Host*>(host)->extension_set(cached);
  }
  return cached->facts;
}

bool same_nvlink_reach(const sg4::Host* a, const sg4::Host* b) {
  const HostFacts& fa = host_facts(a);
  const HostFacts& fb = host_facts(b);
  if (!fa.nvlink_domain.empty() || !fb.nvlink_domain.empty()) return fa.nvlink_domain == fb.nvlink_domain;
  return !fa.node.empty() && fa.node == fb.node;
}

}  // namespace aggsim
