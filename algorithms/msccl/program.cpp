// Reading an MSCCL algorithm file with expat (a streaming parser: linear in the file, no recursion,
// each start tag's line at hand). Each element's attributes are checked as they arrive, so an error
// names the line and attribute where it is; the checks of the program as a whole follow
// (program_checks.cpp).
#include "algorithms/msccl/program.hpp"

#include <expat.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <set>

#include "algorithms/msccl/program_checks.hpp"
#include "sim/core/error.hpp"
#include "sim/core/input_file.hpp"

namespace aggsim {

const char* msccl_collective_name(MscclCollective c) {
  return c == MscclCollective::allreduce ? "allreduce" : "allgather";
}

const char* msccl_buffer_name(MscclBuffer b) {
  switch (b) {
    case MscclBuffer::input:
      return "input";
    case MscclBuffer::output:
      return "output";
    case MscclBuffer::scratch:
      return "scratch";
  }
  return "?";
}

namespace {

struct StepTypeInfo {
  MscclStepType type;
  const char* code;
  bool sends, receives, reduces, reads_src, writes_dst;
};

constexpr StepTypeInfo kStepTypes[] = {
    {MscclStepType::send, "s", true, false, false, true, false},
    {MscclStepType::recv, "r", false, true, false, false, true},
    {MscclStepType::recv_copy_send, "rcs", true, true, false, false, true},
    {MscclStepType::recv_reduce_send, "rrs", true, true, true, true, false},
    {MscclStepType::recv_reduce_copy, "rrc", false, true, true, true, true},
    {MscclStepType::recv_reduce_copy_send, "rrcs", true, true, true, true, true},
    {MscclStepType::copy, "cpy", false, false, false, true, true},
    {MscclStepType::reduce, "re", false, false, true, true, true},
    {MscclStepType::nop, "nop", false, false, false, false, false},
};

const StepTypeInfo& info(MscclStepType t) {
  return kStepTypes[static_cast<int>(t)];
}

}  // namespace

const char* msccl_step_type_code(MscclStepType t) {
  return info(t).code;
}
bool msccl_step_sends(MscclStepType t) {
  return info(t).sends;
}
bool msccl_step_receives(MscclStepType t) {
  return info(t).receives;
}
bool msccl_step_reduces(MscclStepType t) {
  return info(t).reduces;
}
bool msccl_step_reads_src(MscclStepType t) {
  return info(t).reads_src;
}
bool msccl_step_writes_dst(MscclStepType t) {
  return info(t).writes_dst;
}

int MscclProgram::input_size() const {
  return collective == MscclCollective::allreduce ? chunks_per_loop : chunks_per_loop / gpus;
}

MscclLocation msccl_locate(const MscclProgram& p, int gpu, MscclBuffer b, int offset) {
  if (p.inplace && p.collective == MscclCollective::allreduce && b == MscclBuffer::output)
    return {MscclBuffer::input, offset};
  if (p.inplace && p.collective == MscclCollective::allgather && b == MscclBuffer::input)
    return {MscclBuffer::output, gpu * p.input_size() + offset};
  return {b, offset};
}

MscclBuffer msccl_result_buffer(const MscclProgram& p) {
  return p.inplace && p.collective == MscclCollective::allreduce ? MscclBuffer::input : MscclBuffer::output;
}

std::string MscclProgram::where(int at_line) const {
  return fmt::format("{}:{}", file, at_line);
}

namespace {

// One element's attributes: each taken once by name, the rest refused as unknown.
class Attributes {
 public:
  Attributes(std::string element, const XML_Char** atts, std::string where)
      : element_(std::move(element)), where_(std::move(where)) {
    for (int i = 0; atts[i]; i += 2) values_[atts[i]] = atts[i + 1];
  }

  [[noreturn]] void fail(const std::string& attribute, const std::string& message) const {
    throw InputError(
        fmt::format("{}: {}{}{}: {}", where_, element_, attribute.empty() ? "" : ".", attribute, message));
  }
  std::optional<std::string> optional_text(const std::string& key) {
    taken_.insert(key);
    auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }
  std::string text(const std::string& key) {
    auto v = optional_text(key);
    if (!v) fail(key, "missing attribute");
    return *v;
  }
  // A whole number in [lo, hi].
  std::int64_t integer(const std::string& key, std::int64_t lo, std::int64_t hi) {
    return parse(key, text(key), lo, hi);
  }
  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t lo, std::int64_t hi) {
    auto v = optional_text(key);
    if (!v) return std::nullopt;
    return parse(key, *v, lo, hi);
  }
  bool flag(const std::string& key) { return integer(key, 0, 1) == 1; }
  // Refuses the attributes nobody took.
  void finish() const {
    for (const auto& [key, value] : values_)
      if (!taken_.count(key)) {
        std::string known;
        for (const auto& k : taken_) known += (known.empty() ? "" : ", ") + k;
        fail(key, fmt::format("unknown attribute (<{}> takes {})", element_, known));
      }
  }

 private:
  std::int64_t parse(const std::string& key, const std::string& text, std::int64_t lo,
                     std::int64_t hi) const {
    std::int64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || ptr != end)
      fail(key, fmt::format("'{}' is not a whole number", text));
    if (v < lo || v > hi) fail(key, fmt::format("{} is outside [{}, {}]", v, lo, hi));
    return v;
  }

  std::string element_, where_;
  std::map<std::string, std::string> values_;
  std::set<std::string> taken_;
};

MscclBuffer parse_buffer(Attributes& a, const std::string& key) {
  const std::string v = a.text(key);
  if (v == "i") return MscclBuffer::input;
  if (v == "o") return MscclBuffer::output;
  if (v == "s") return MscclBuffer::scratch;
  a.fail(key, fmt::format("'{}' is not a buffer (i, o or s)", v));
}

class Reader {
 public:
  explicit Reader(const std::string& file) : parser_(XML_ParserCreate(nullptr)) {
    program_.file = file;
    if (!parser_) throw std::bad_alloc();
    XML_SetUserData(parser_, this);
    XML_SetElementHandler(parser_, &Reader::on_start, &Reader::on_end);
    XML_SetCharacterDataHandler(parser_, &Reader::on_text);
    XML_SetStartDoctypeDeclHandler(parser_, &Reader::on_doctype);
  }
  ~Reader() { XML_ParserFree(parser_); }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  MscclProgram read(const std::string& text) {
    // expat takes an int length: feed the text in pieces.
    constexpr std::size_t kPiece = 1 << 20;
    std::size_t at = 0;
    do {
      const std::size_t n = std::min(kPiece, text.size() - at);
      const bool last = at + n == text.size();
      if (XML_Parse(parser_, text.data() + at, static_cast<int>(n), last) != XML_STATUS_OK) {
        if (failure_) std::rethrow_exception(failure_);
        throw InputError(fmt::format("{}:{}: malformed XML: {}", program_.file,
                                     XML_GetCurrentLineNumber(parser_),
                                     XML_ErrorString(XML_GetErrorCode(parser_))));
      }
      at += n;
    } while (at < text.size());
    if (!seen_algo_) throw InputError(fmt::format("{}:1: algo: no <algo> element", program_.file));
    return std::move(program_);
  }

 private:
  // Expat is C: nothing may be thrown through it. A callback's error stops the parser and is
  // rethrown once XML_Parse returns.
  template <class F>
  void guarded(F&& body) {
    if (failure_) return;
    try {
      body();
    } catch (...) {
      failure_ = std::current_exception();
      XML_StopParser(parser_, XML_FALSE);
    }
  }
  static void XMLCALL on_start(void* self, const XML_Char* name, const XML_Char** atts) {
    auto* r = static_cast<Reader*>(self);
    r->guarded([&] { r->start(name, atts); });
  }
  static void XMLCALL on_end(void* self, const XML_Char* /*name*/) {
    auto* r = static_cast<Reader*>(self);
    r->guarded([&] { r->end(); });
  }
  static void XMLCALL on_text(void* self, const XML_Char* s, int len) {
    auto* r = static_cast<Reader*>(self);
    r->guarded([&] {
      for (int i = 0; i < len; ++i)
        if (!std::strchr(" \t\r\n", s[i]))
          throw InputError(
              fmt::format("{}: {}: unexpected text (a program holds elements and attributes only)",
                          r->where(), r->open_.empty() ? "algo" : r->open_.back()));
    });
  }
  static void XMLCALL on_doctype(void* self, const XML_Char*, const XML_Char*, const XML_Char*, int) {
    auto* r = static_cast<Reader*>(self);
    r->guarded([&] {
      throw InputError(fmt::format("{}: algo: a program has no DOCTYPE (nor entities)", r->where()));
    });
  }

  int line() const { return static_cast<int>(XML_GetCurrentLineNumber(parser_)); }
  std::string where() const { return program_.where(line()); }

  void start(const std::string& name, const XML_Char** atts) {
    const std::string parent = open_.empty() ? "" : open_.back();
    const char* expected = parent.empty()     ? "algo"
                           : parent == "algo" ? "gpu"
                           : parent == "gpu"  ? "tb"
                                              : "step";
    // Nothing of a file is shown before it is known to be a program (it may be any XML file).
    if (parent.empty() && name != "algo")
      throw InputError(fmt::format(
          "{}: algo: not an MSCCL program: its first element is not <algo> (the file's text is not shown)",
          where()));
    if (parent == "step") throw InputError(fmt::format("{}: {}: <step> holds no elements", where(), name));
    if (name == "op" && parent == "tb")
      throw InputError(fmt::format(
          "{}: op: the newer <op>-based format is not read yet: compile with msccl-tools' default "
          "step-based format (<step s=...>)",
          where()));
    if (name != expected)
      throw InputError(fmt::format("{}: {}: unexpected element <{}> here (expected <{}>{})", where(), name,
                                   name, expected, parent.empty() ? "" : " inside <" + parent + ">"));
    Attributes a(name, atts, where());
    if (name == "algo") {
      if (seen_algo_) throw InputError(fmt::format("{}: algo: a second <algo> element", where()));
      seen_algo_ = true;
      algo(a);
    } else if (name == "gpu") {
      gpu(a);
    } else if (name == "tb") {
      threadblock(a);
    } else {
      step(a);
    }
    a.finish();
    open_.push_back(name);
  }

  void end() {
    const std::string closed = open_.back();
    open_.pop_back();
    if (closed == "gpu") {
      MscclGpu& g = program_.gpu[static_cast<std::size_t>(gpu_)];
      auto& tbs = g.threadblocks;
      std::stable_sort(tbs.begin(), tbs.end(),
                       [](const MscclThreadblock& x, const MscclThreadblock& y) { return x.id < y.id; });
      for (std::size_t t = 0; t < tbs.size(); ++t) {
        if (t > 0 && tbs[t].id == tbs[t - 1].id)
          throw InputError(fmt::format("{}: tb.id: gpu {} already has threadblock {} (line {})",
                                       program_.where(tbs[t].line), g.id, tbs[t].id, tbs[t - 1].line));
        if (tbs[t].id != static_cast<int>(t))
          throw InputError(
              fmt::format("{}: tb.id: gpu {} has no threadblock {} (ids run 0, 1, 2, ... as the "
                          "runtime requires)",
                          program_.where(g.line), g.id, t));
      }
    } else if (closed == "algo") {
      for (int g = 0; g < program_.gpus; ++g)
        if (program_.gpu[static_cast<std::size_t>(g)].line == 0)
          throw InputError(fmt::format("{}: algo.ngpus: {} GPUs, but there is no <gpu id=\"{}\">",
                                       program_.where(program_.line), program_.gpus, g));
    }
  }

  void algo(Attributes& a) {
    MscclProgram& p = program_;
    p.line = line();
    p.name = a.text("name");
    const std::string proto = a.text("proto");
    if (proto == "Simple")
      p.protocol = Protocol::simple;
    else if (proto == "LL128")
      p.protocol = Protocol::ll128;
    else if (proto == "LL")
      p.protocol = Protocol::ll;
    else
      a.fail("proto", fmt::format("'{}' is not a protocol (Simple, LL128 or LL)", proto));
    p.channels = static_cast<int>(a.integer("nchannels", 1, kMscclMaxChannels));
    p.chunks_per_loop = static_cast<int>(a.integer("nchunksperloop", 1, kMscclMaxChunks));
    p.gpus = static_cast<int>(a.integer("ngpus", 1, kMscclMaxGpus));
    const std::string coll = a.text("coll");
    if (coll == "allreduce")
      p.collective = MscclCollective::allreduce;
    else if (coll == "allgather")
      p.collective = MscclCollective::allgather;
    else
      a.fail("coll", fmt::format("'{}': aggsim runs allreduce and allgather programs", coll));
    if (static_cast<std::int64_t>(p.chunks_per_loop) * p.gpus > kMscclMaxTotalChunks)
      a.fail("nchunksperloop",
             fmt::format("{} chunks on each of {} GPUs: more than the {} chunks aggsim reads",
                         p.chunks_per_loop, p.gpus, kMscclMaxTotalChunks));
    if (p.collective == MscclCollective::allgather && p.chunks_per_loop % p.gpus != 0)
      a.fail("nchunksperloop",
             fmt::format("{} does not divide among the {} GPUs of an all-gather", p.chunks_per_loop, p.gpus));
    p.inplace = a.flag("inplace");
    p.outofplace = a.optional_integer("outofplace", 0, 1).value_or(p.inplace ? 0 : 1) == 1;
    constexpr std::int64_t kMaxBytes = std::int64_t{1} << 62;
    p.min_bytes = static_cast<std::uint64_t>(a.optional_integer("minBytes", 0, kMaxBytes).value_or(0));
    p.max_bytes = static_cast<std::uint64_t>(a.optional_integer("maxBytes", 0, kMaxBytes).value_or(0));
    if (p.max_bytes != 0 && p.max_bytes < p.min_bytes)
      a.fail("maxBytes",
             fmt::format("{} is below minBytes {} (0 means no upper bound)", p.max_bytes, p.min_bytes));
    p.gpu.resize(static_cast<std::size_t>(p.gpus));
  }

  void gpu(Attributes& a) {
    MscclProgram& p = program_;
    const int id = static_cast<int>(a.integer("id", 0, p.gpus - 1));
    MscclGpu& g = p.gpu[static_cast<std::size_t>(id)];
    if (g.line != 0) a.fail("id", fmt::format("gpu {} was already given at line {}", id, g.line));
    g.id = id;
    g.line = line();
    g.input_chunks = static_cast<int>(a.integer("i_chunks", 0, p.input_size()));
    g.output_chunks = static_cast<int>(a.integer("o_chunks", 0, p.output_size()));
    g.scratch_chunks = static_cast<int>(a.integer("s_chunks", 0, kMscclMaxChunks));
    total_chunks_ += g.input_chunks + g.output_chunks + g.scratch_chunks;
    if (total_chunks_ > kMscclMaxTotalChunks)
      a.fail("s_chunks",
             fmt::format("the GPUs so far declare more than {} chunks in all", kMscclMaxTotalChunks));
    gpu_ = id;
  }

  void threadblock(Attributes& a) {
    MscclProgram& p = program_;
    MscclGpu& g = p.gpu[static_cast<std::size_t>(gpu_)];
    // Listed in any order; sorted and checked for gaps and duplicates when the <gpu> closes.
    const int id = static_cast<int>(a.integer("id", 0, kMscclMaxThreadblocks - 1));
    g.threadblocks.emplace_back();
    MscclThreadblock& tb = g.threadblocks.back();
    tb.id = id;
    tb.line = line();
    for (const char* key : {"send", "recv"}) {
      const int peer = static_cast<int>(a.integer(key, -1, p.gpus - 1));
      if (peer == g.id) a.fail(key, fmt::format("gpu {} cannot {} to itself (-1: no peer)", g.id, key));
      (std::strcmp(key, "send") == 0 ? tb.send_peer : tb.recv_peer) = peer;
    }
    tb.channel = static_cast<int>(a.integer("chan", 0, p.channels - 1));
  }

  void step(Attributes& a) {
    MscclProgram& p = program_;
    MscclGpu& g = p.gpu[static_cast<std::size_t>(gpu_)];
    MscclThreadblock& tb = g.threadblocks.back();
    MscclStep s;
    s.line = line();
    const auto index = static_cast<std::int64_t>(tb.steps.size());
    const std::int64_t number = a.integer("s", 0, std::int64_t{1} << 31);
    if (number != index)
      a.fail("s", fmt::format("{}, but this is step {} of threadblock {} (steps are numbered 0, 1, 2, ... in "
                              "order)",
                              number, index, tb.id));
    const std::string type = a.text("type");
    bool known = false;
    for (const auto& t : kStepTypes)
      if (type == t.code) {
        s.type = t.type;
        known = true;
      }
    if (!known)
      a.fail("type", fmt::format("'{}' is not a step type (s r rcs rrs rrc rrcs cpy re nop)", type));
    s.src = parse_buffer(a, "srcbuf");
    s.dst = parse_buffer(a, "dstbuf");
    s.src_offset = static_cast<int>(a.integer("srcoff", -1, kMscclMaxChunks));
    s.dst_offset = static_cast<int>(a.integer("dstoff", -1, kMscclMaxChunks));
    s.count = static_cast<int>(a.integer("cnt", s.type == MscclStepType::nop ? 0 : 1, kMscclMaxChunks));
    s.dep_tb = static_cast<int>(a.integer("depid", -1, kMscclMaxThreadblocks - 1));
    s.dep_step = static_cast<int>(a.integer("deps", -1, std::int64_t{1} << 31));
    s.has_dep = a.flag("hasdep");
    if ((s.dep_tb < 0) != (s.dep_step < 0))
      a.fail(s.dep_tb < 0 ? "deps" : "depid", "depid and deps are both -1 (no dependency) or both a step");
    if (s.dep_tb == tb.id)
      a.fail("depid", fmt::format("threadblock {} waits for itself (its steps run in order already)", tb.id));
    if (msccl_step_sends(s.type) && tb.send_peer < 0)
      a.fail("type", fmt::format("{} sends, but threadblock {} has no send peer (send=\"-1\")", type, tb.id));
    if (msccl_step_receives(s.type) && tb.recv_peer < 0)
      a.fail("type",
             fmt::format("{} receives, but threadblock {} has no receive peer (recv=\"-1\")", type, tb.id));
    const auto check_side = [&](const char* key, MscclBuffer b, int offset) {
      const int chunks = b == MscclBuffer::input    ? g.input_chunks
                         : b == MscclBuffer::output ? g.output_chunks
                                                    : g.scratch_chunks;
      const char* declared = b == MscclBuffer::input    ? "i_chunks"
                             : b == MscclBuffer::output ? "o_chunks"
                                                        : "s_chunks";
      if (offset < 0)
        a.fail(key, fmt::format("{} uses this side: the offset must be a chunk (0 or more)", type));
      if (offset + s.count > chunks)
        a.fail(key,
               fmt::format("chunks {} to {} are past the {} buffer's {} chunks (gpu {} {}=\"{}\")", offset,
                           offset + s.count - 1, msccl_buffer_name(b), chunks, g.id, declared, chunks));
    };
    if (msccl_step_reads_src(s.type)) check_side("srcoff", s.src, s.src_offset);
    if (msccl_step_writes_dst(s.type)) check_side("dstoff", s.dst, s.dst_offset);
    tb.steps.push_back(s);
    ++p.step_count;
  }

  XML_Parser parser_;
  MscclProgram program_;
  std::vector<std::string> open_;
  bool seen_algo_ = false;
  int gpu_ = 0;
  std::int64_t total_chunks_ = 0;
  std::exception_ptr failure_;
};

}  // namespace

MscclProgram read_msccl_program_text(const std::string& text, const std::string& file) {
  check_utf8(text, file);
  MscclProgram program = Reader(file).read(text);
  check_msccl_program_structure(program);
  return program;
}

}  // namespace aggsim
