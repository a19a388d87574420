#pragma once
// Checks a SimGrid platform XML for the mistakes SimGrid 3.32 answers with an abort (xbt_die,
// SIGABRT) or a silently wrong platform, so the user gets "file:line: message" instead:
// an unknown zone routing, a duplicate link id, cluster topologies whose topo_parameters are
// malformed or do not match the number of hosts in `radical`, and (for ns-3) clusters that SimGrid's
// ns-3 binding cannot build or hosts that only routes longer than one link join (ns-3 never sees those).
// Errors SimGrid reports itself (unknown tag or attribute, missing attribute, bad unit, unknown route end)
// are reworded by explain_simgrid_error().
#include <map>
#include <string>
#include <vector>

namespace aggsim {

// A start tag of a well-formed XML document, with its line.
struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  int line = 0;
  std::string attribute(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? std::string() : it->second;
  }
};

// Start tags in document order. Expects a well-formed document (checked before with Boost).
std::vector<XmlElement> scan_xml_elements(const std::string& text);

// Throws InputError("file:line: ...") on the first problem found. `for_ns3`: also reject what the
// ns-3 network model cannot run.
void check_platform_xml(const std::string& file, bool for_ns3);

// Turns an exception message from SimGrid's platform parser into "file:line: message".
std::string explain_simgrid_error(const std::string& file, const std::string& what);

}  // namespace aggsim
