#include "sim/platform/ns3_environment.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace aggsim {

namespace {
char** remembered_argv = nullptr;
}

void remember_program_arguments(char** argv) {
  remembered_argv = argv;
}

void reexec_with_ns3_defaults() {
  if (remembered_argv == nullptr) return;
  const char* theirs = std::getenv(kNs3AttributeVariable);
  if (theirs && std::string(theirs).find("TcpSocket::SndBufSize") != std::string::npos) return;
  std::string value = kNs3SendBuffer;
  if (theirs && *theirs) value += std::string("|") + theirs;
  setenv(kNs3AttributeVariable, value.c_str(), 1);
  execv("/proc/self/exe", remembered_argv);  // returns only on failure: then run on, ns-3 keeps its default
}

}  // namespace aggsim
