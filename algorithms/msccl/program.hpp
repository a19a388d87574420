#pragma once
// An MSCCL algorithm file (MSCCL-IR XML in the step-based format the MSCCLang compiler of
// msccl-tools writes by default) as plain structs: per GPU its buffers' chunk counts and its
// threadblocks, each an ordered list of steps on one connection (send peer, receive peer, channel).
// Reading checks every element and attribute (file:line, element.attribute, what is wrong) and the
// program as a whole (matched sends and receives per connection, dependencies that exist and are
// signalled, no dependency cycle, offsets inside their buffers); algorithms/msccl/README.md lists
// the subset read and what each check refuses.
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/nccl/protocol.hpp"

namespace aggsim {

enum class MscclCollective { allreduce, allgather };
const char* msccl_collective_name(MscclCollective c);

enum class MscclBuffer { input, output, scratch };
const char* msccl_buffer_name(MscclBuffer b);  // "input", "output", "scratch"

// The runtime's transfer types (msccl-tools' Instruction, the executor's MSCCL_* codes).
enum class MscclStepType {
  send,                   // s: send src
  recv,                   // r: receive into dst
  recv_copy_send,         // rcs: receive into dst and send it on
  recv_reduce_send,       // rrs: receive, reduce with src, send the result on
  recv_reduce_copy,       // rrc: receive, reduce with src into dst
  recv_reduce_copy_send,  // rrcs: receive, reduce with src into dst, send it on
  copy,                   // cpy: dst = src
  reduce,                 // re: dst = dst (op) src
  nop                     // nop: only waits for its dependency
};
const char* msccl_step_type_code(MscclStepType t);  // "s", "r", "rcs", ...
bool msccl_step_sends(MscclStepType t);
bool msccl_step_receives(MscclStepType t);
bool msccl_step_reduces(MscclStepType t);
bool msccl_step_reads_src(MscclStepType t);  // reads its local source chunks
bool msccl_step_writes_dst(MscclStepType t);

struct MscclStep {
  MscclStepType type = MscclStepType::nop;
  MscclBuffer src = MscclBuffer::input;
  int src_offset = -1;
  MscclBuffer dst = MscclBuffer::output;
  int dst_offset = -1;
  int count = 1;    // chunks the step moves
  int dep_tb = -1;  // the step first waits for step `dep_step` of threadblock `dep_tb`
  int dep_step = -1;
  bool has_dep = false;  // other threadblocks wait for this step (the runtime signals it)
  int line = 0;
};

struct MscclThreadblock {
  int id = 0;
  int send_peer = -1;  // -1: none
  int recv_peer = -1;
  int channel = 0;
  std::vector<MscclStep> steps;
  int line = 0;
};

struct MscclGpu {
  int id = 0;
  int input_chunks = 0, output_chunks = 0, scratch_chunks = 0;
  std::vector<MscclThreadblock> threadblocks;  // indexed by id
  int line = 0;
};

struct MscclProgram {
  std::string file;  // as named in messages
  int line = 0;      // the <algo> element's
  std::string name;
  Protocol protocol = Protocol::simple;
  int channels = 1;
  int chunks_per_loop = 1;
  int gpus = 1;
  MscclCollective collective = MscclCollective::allreduce;
  bool inplace = false;
  bool outofplace = true;
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = 0;  // 0: no upper bound
  std::vector<MscclGpu> gpu;    // indexed by id
  std::size_t step_count = 0;   // over all GPUs

  // Chunks of a rank's input and output buffers in one call: an all-reduce's input and output hold
  // chunks_per_loop chunks; an all-gather's input chunks_per_loop / gpus, its output all of them.
  int input_size() const;
  int output_size() const { return chunks_per_loop; }
  // "ring.xml:12" for messages.
  std::string where(int at_line) const;
};

// Where chunk `offset` of buffer `b` of `gpu` lives, as the runtime lays buffers out: an in-place
// all-reduce has one buffer (output is input); an in-place all-gather's input is the rank's part of
// the output (input chunk c of rank r is output chunk r * input_size() + c).
struct MscclLocation {
  MscclBuffer storage = MscclBuffer::input;
  int index = 0;
};
MscclLocation msccl_locate(const MscclProgram& p, int gpu, MscclBuffer b, int offset);
// Where the collective's result is: an in-place all-reduce's input, otherwise the output.
MscclBuffer msccl_result_buffer(const MscclProgram& p);

// Bounds that keep a hostile file from exhausting memory; far above any real program (the MSCCL
// runtime stores offsets as 16-bit numbers and runs at most 32 channels).
constexpr int kMscclMaxGpus = 1 << 16;
constexpr int kMscclMaxChunks = 1 << 15;
constexpr std::int64_t kMscclMaxTotalChunks = std::int64_t{1} << 22;
constexpr int kMscclMaxChannels = 32;
constexpr int kMscclMaxThreadblocks = 1024;  // per GPU (MSCCL_MAX_NUM_THREAD_BLOCKS)

// Reads a program's text (the caller reads the file: msccl.cpp) and checks it; every problem is an
// InputError "file:line: element.attribute: message", `file` naming the text in messages.
MscclProgram read_msccl_program_text(const std::string& text, const std::string& file);

}  // namespace aggsim
