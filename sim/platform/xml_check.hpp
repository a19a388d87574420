#pragma once
// Checks a SimGrid platform XML for the mistakes SimGrid 3.32 answers with an abort (xbt_die,
// SIGABRT) or a silently wrong platform, so the user gets "file:line: message" instead:
// an unknown zone routing, a duplicate link id, a duplicate route, zones nested hundreds deep, a zero,
// negative or non-finite bandwidth (or a negative latency, a zero speed), cluster topologies whose
// topo_parameters are malformed or do not match the number of hosts in `radical`, and (for ns-3) clusters
// that SimGrid's ns-3 binding cannot build or hosts that only routes longer than one link join (ns-3 never
// sees those). Errors SimGrid reports itself (unknown tag or attribute, missing attribute, bad unit, unknown
// route end) are reworded by explain_simgrid_error().
#include <map>
#include <string>
#include <vector>

namespace aggsim {

// A start tag of a well-formed XML document, with its line.
struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  int line = 0;
  int column = 0;   // of its '<', in characters from 1
  int depth = 0;    // enclosing elements (the root element has 0)
  int parent = -1;  // index of the enclosing element in the scan, -1 for the root
  std::string attribute(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? std::string() : it->second;
  }
};

// Start tags in document order. Never fails: on malformed text it returns what it could read, so
// it can bound the nesting before a recursive parser sees the document.
std::vector<XmlElement> scan_xml_elements(const std::string& text);

// Nesting bounds: far above real platforms (SimGrid's own examples nest zones 3 or 4 deep), far
// below what breaks SimGrid 3.32 (it corrupts its heap on a few hundred nested zones) or the
// recursive XML parsers.
constexpr int kMaxZoneNesting = 32;
constexpr int kMaxXmlDepth = 64;

// Throws InputError("file:line:col: ...") on the first problem found: the file itself (regular, at
// most 64 MiB, UTF-8), a root element other than <platform> (then nothing of the file is shown:
// it may be any file), nesting beyond the bounds above, malformed XML, then the element checks.
// `for_ns3`: also reject what the ns-3 network model cannot run.
void check_platform_xml(const std::string& file, bool for_ns3);
// The same on text already read (`file` names it in messages); what the fuzzer drives.
void check_platform_xml_text(const std::string& text, const std::string& file, bool for_ns3);

// Turns an exception message from SimGrid's platform parser into "file:line:col: message".
std::string explain_simgrid_error(const std::string& file, const std::string& what);

}  // namespace aggsim
