#pragma once
// SimGrid 3.32's ns-3 binding closes the receiving socket as soon as a message is fully buffered
// at the sender; with ns-3's default 128 KiB TCP send buffer a larger message is then cut short
// and SimGrid aborts ("total_bytes is not sent_bytes"). A send buffer that takes any message at
// once avoids it; the receiver's window, hence TCP's flow control, is unchanged. ns-3 reads its
// attribute defaults from NS_ATTRIBUTE_DEFAULT once, while its libraries load, so the variable
// must be in the environment before the process starts.
namespace aggsim {

// Name and value of the ns-3 attribute aggsim needs.
constexpr const char* kNs3AttributeVariable = "NS_ATTRIBUTE_DEFAULT";
constexpr const char* kNs3SendBuffer = "ns3::TcpSocket::SndBufSize=4000000000";

// Remembers the program's arguments for a later re-execution. Call first thing in main(); programs
// that never call it (tests) never re-execute.
void remember_program_arguments(char** argv);

// Before an ns-3 simulation: when NS_ATTRIBUTE_DEFAULT does not set the send buffer yet, adds ours
// (keeping the user's other defaults) and re-executes this program with the remembered arguments;
// returns only when nothing was needed, no arguments were remembered, or exec failed. Only ns-3
// runs pay for the re-execution (0.07 CPU s).
void reexec_with_ns3_defaults();

}  // namespace aggsim
