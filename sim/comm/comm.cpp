#include "sim/comm/comm.hpp"

#include "sim/comm/receiver_latency.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "sim/core/checked.hpp"

namespace aggsim {

namespace {
// Payloads in flight, recycled: the sender moves its payload into a pooled object, the receiver
// moves it out and returns the object. Every actor runs on SimGrid's one thread.
class PayloadPool {
 public:
  Payload* acquire(Payload&& payload) {
    if (free_.empty()) {
      owned_.push_back(std::make_unique<Payload>(std::move(payload)));
      return owned_.back().get();
    }
    Payload* p = free_.back();
    free_.pop_back();
    *p = std::move(payload);
    return p;
  }
  Payload release(Payload* p) {
    Payload out = std::move(*p);
    free_.push_back(p);
    return out;
  }

 private:
  std::vector<std::unique_ptr<Payload>> owned_;
  std::vector<Payload*> free_;
};

PayloadPool& payload_pool() {
  static PayloadPool pool;
  return pool;
}

// A message that carries nothing but its size (every message with math off) travels with no
// payload object: the pointer handed to SimGrid is the size itself, shifted left and tagged in its
// low bit, which a real (aligned) Payload* never has.
constexpr std::uint64_t kSizeOnlyLimit = std::uint64_t{1} << 62;
static_assert(sizeof(std::uintptr_t) >= sizeof(std::uint64_t), "a size travels in a pointer");

bool size_only(const Payload& p) {
  return p.values.size() == 0 && p.indices.empty() && p.scales.size() == 0 && p.codes.empty() && p.tag == 0 &&
         p.seed == 0 && p.wire_bytes < kSizeOnlyLimit;
}

void* size_only_pointer(std::uint64_t wire_bytes) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>((wire_bytes << 1) | 1));
}

Payload take_payload(Payload* received) {
  const auto bits = reinterpret_cast<std::uintptr_t>(received);
  if ((bits & 1) == 0) return payload_pool().release(received);
  Payload bare;
  bare.wire_bytes = static_cast<std::uint64_t>(bits >> 1);
  return bare;
}

// The transfer's own start and end (not when it was posted or waited for).
void record(Tracer* tracer, CommSpan span, const sg4::Comm& comm) {
  span.start = comm.get_start_time();
  span.end = comm.get_finish_time();
  tracer->comm(span);
}
}  // namespace

double SendHandle::wait() {
  double end = sg4::Engine::get_clock();
  if (comm_) {
    comm_->wait();
    end = comm_->get_finish_time();
    if (tracer_) record(tracer_, span_, *comm_);
    if (owner_) owner_->note_transfer(comm_->get_start_time(), end);
  }
  comm_ = nullptr;
  return end;
}

bool SendHandle::done() const {
  return comm_ == nullptr || comm_->test();
}

Payload RecvHandle::wait(double* arrived) {
  if (settled_) {
    settled_ = false;
    if (arrived) *arrived = sg4::Engine::get_clock();
    return Payload();
  }
  if (local_) {
    Payload received = local_->receive(key_, seq_, owner_->global_rank(owner_->rank()));
    local_ = nullptr;
    if (arrived) *arrived = sg4::Engine::get_clock();
    return received;
  }
  if (!comm_) throw std::logic_error("RecvHandle::wait on an empty or already waited handle");
  comm_->wait();
  if (arrived) *arrived = comm_->get_finish_time();
  if (owner_) owner_->note_received(*comm_);
  Payload received = take_payload(*slot_);
  pool_->release(slot_);
  slot_ = nullptr;
  if (tracer_) {
    span_.bytes = received.wire_bytes;
    record(tracer_, span_, *comm_);
  }
  comm_ = nullptr;
  return received;
}

bool RecvHandle::done() const {
  if (settled_) return true;
  if (local_) return local_->arrived(key_, seq_);
  return comm_ != nullptr && comm_->test();
}

Payload** SlotPool::acquire() {
  if (free_.empty()) {
    slots_.push_back(nullptr);
    return &slots_.back();
  }
  Payload** slot = free_.back();
  free_.pop_back();
  *slot = nullptr;
  return slot;
}

// Both plans, SimGrid's mailboxes and the in-process network of a replayed step, refuse the same
// addresses.
void Comm::check_peer(int peer) const {
  if (peer < 0 || peer >= size_)
    throw std::out_of_range(fmt::format("rank {} addressed peer outside [0, {})", rank_, size_));
}

Comm::BoxEntry& Comm::box(int peer, bool sending, int channel) {
  check_peer(peer);
  const std::uint64_t key = (static_cast<std::uint64_t>(channel) << 40) ^
                            (static_cast<std::uint64_t>(sending) << 39) ^ static_cast<std::uint64_t>(peer);
  // Most algorithms send to one peer and receive from another, step after step: try the last
  // mailbox used in this direction before searching.
  std::size_t& hint = sending ? last_send_box_ : last_recv_box_;
  if (hint < boxes_.size() && boxes_[hint].key == key) return boxes_[hint];
  const auto find = [&] {
    return std::lower_bound(boxes_.begin(), boxes_.end(), key,
                            [](const BoxEntry& e, std::uint64_t k) { return e.key < k; });
  };
  auto it = find();
  if (it == boxes_.end() || it->key != key) {
    const int src = sending ? rank_ : peer, dst = sending ? peer : rank_;
    // A simcall: other actors of this rank (a collective's channels) may run, and add mailboxes,
    // before it returns, so search again after it.
    auto* mb = sg4::Mailbox::by_name(fmt::format("{}>{}#{}", global_rank(src), global_rank(dst), channel));
    it = find();
    if (it == boxes_.end() || it->key != key) it = boxes_.insert(it, BoxEntry{key, mb});
  }
  hint = static_cast<std::size_t>(it - boxes_.begin());
  return *it;
}

// Folds one post into the step's tape (FNV-1a over its fields).
void Comm::note_post(std::uint64_t kind, int peer, int channel, std::uint64_t bytes) const {
  if (!recording_) return;
  for (const std::uint64_t v :
       {kind, static_cast<std::uint64_t>(peer), static_cast<std::uint64_t>(channel), bytes}) {
    tape_.posts ^= v;
    tape_.posts *= 0x100000001b3ULL;
  }
}

void Comm::note_work(double flops) const {
  if (!recording_) return;
  std::uint64_t bits;
  static_assert(sizeof bits == sizeof flops);
  std::memcpy(&bits, &flops, sizeof bits);
  tape_.work += (bits ^ 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
}

void Comm::note_received(const sg4::Comm& transfer) {
  note_transfer(transfer.get_start_time(), transfer.get_finish_time());
  if (transfer.get_start_time() >= call_entry_)
    call_window_.add(transfer.get_start_time(), transfer.get_finish_time());
  if (!recording_) return;
  tape_.first_start = std::min(tape_.first_start, transfer.get_start_time());
  tape_.last_end = std::max(tape_.last_end, transfer.get_finish_time());
}

void Comm::begin_call() {
  call_window_ = TransferWindow{};
  call_entry_ = sg4::Engine::get_clock();
  activity_first_ = std::numeric_limits<double>::infinity();
  activity_last_ = TransferWindow::kNever;
}

void Comm::note_activity(double start, double end) const {
  if (local_) return;  // a replayed step's times come from the record
  activity_first_ = std::min(activity_first_, start);
  activity_last_ = std::max(activity_last_, end);
}

// A transfer belongs to the call in which it started (a push a parameter server left for later
// belongs to the call that sent it).
void Comm::note_transfer(double start, double end) const {
  if (start >= call_entry_) note_activity(start, end);
}

TransferWindow Comm::take_call_window() {
  TransferWindow window = std::exchange(call_window_, TransferWindow{});
  if (activity_first_ <= activity_last_) {
    window.part_start = activity_first_;
    window.part_end = activity_last_;
  }
  if (recording_) tape_.calls.push_back(window);
  return window;
}

void Comm::count_as_sent_by(Comm& other, std::uint64_t bytes) {
  // A saturated counter stays saturated (sim/core/checked.hpp).
  if (counters_.bytes_sent != std::numeric_limits<std::uint64_t>::max()) counters_.bytes_sent -= bytes;
  add_saturating(other.counters_.bytes_sent, bytes);
  add_saturating(other.counters_.messages_sent, 1);
}

SendHandle Comm::isend(int dst, Payload payload, int channel, double rate) {
  return post_send(dst, std::move(payload), channel, rate, false);
}

SendHandle Comm::start_stream(int dst, std::uint64_t bytes, int channel, double rate, int messages) {
  Payload size_only;
  size_only.wire_bytes = bytes;
  return post_send(dst, std::move(size_only), channel, rate, true, messages);
}

SendHandle Comm::post_send(int dst, Payload payload, int channel, double rate, bool stream, int messages) {
  const std::uint64_t bytes = payload.wire_bytes;
  add_saturating(counters_.bytes_sent, bytes);
  add_saturating(counters_.messages_sent, static_cast<std::uint64_t>(messages));
  note_post(1, dst, channel, bytes);
  if (local_) {
    check_peer(dst);
    if (stream) return SendHandle();  // nothing to deliver (start_stream)
    // Global ranks: a parallel layout's groups replay over one in-process network.
    local_->send(LocalNetwork::key(global_rank(rank_), global_rank(dst), channel), global_rank(dst),
                 std::move(payload));
    return SendHandle();
  }
  // First: a bad peer throws before the payload is pooled. The entry is read before the transfer
  // is posted, a simcall during which another actor of this rank may add mailboxes.
  BoxEntry& out = box(dst, true, channel);
  sg4::Mailbox* mailbox = out.box;
  const std::uint64_t sequence = out.posted++;
  // The receiver moves the payload out of its pooled object.
  void* in_flight =
      size_only(payload) ? size_only_pointer(bytes) : payload_pool().acquire(std::move(payload));
  CommSpan span{global_rank(rank_), CommDirection::send, global_rank(dst), bytes, 0, 0, channel, sequence};
  span.stream = stream;
  if (latency_at_receiver_) receiver_latency::mark(sg4::this_actor::get_host(), static_cast<double>(bytes));
  sg4::CommPtr comm = mailbox->put_init(in_flight, bytes);
  if (rate > 0) comm->set_rate(rate);
  comm->start();
  return SendHandle(std::move(comm), tracer_, span, this);
}

void Comm::pause_until(double when) const {
  if (local_) return;
  const double start = sg4::Engine::get_clock();
  // Below SimGrid's time precision (surf/precision, 1e-9 s by default) a sleep is no sleep.
  if (when - start > 1e-12) sg4::this_actor::sleep_until(when);
  note_activity(start, sg4::Engine::get_clock());
}

void Comm::send(int dst, Payload payload, int channel, double rate) {
  isend(dst, std::move(payload), channel, rate).wait();
}

RecvHandle Comm::irecv(int src, int channel) {
  return post_receive(src, channel, false);
}

RecvHandle Comm::accept_stream(int src, int channel) {
  return post_receive(src, channel, true);
}

RecvHandle Comm::post_receive(int src, int channel, bool stream) {
  note_post(2, src, channel, 0);
  if (local_) {
    check_peer(src);
    if (stream) return RecvHandle::replayed_stream(this);  // nothing is delivered (start_stream)
    const LocalNetwork::Key key = LocalNetwork::key(global_rank(src), global_rank(rank_), channel);
    return RecvHandle(local_, key, local_->post_receive(key), this);
  }
  Payload** slot = slots_.acquire();
  BoxEntry& in = box(src, false, channel);
  sg4::Mailbox* mailbox = in.box;  // read before the simcall (see post_send)
  const std::uint64_t sequence = in.posted++;
  auto comm = mailbox->get_async<Payload>(slot);
  CommSpan span{global_rank(rank_), CommDirection::recv, global_rank(src), 0, 0, 0, channel, sequence};
  span.stream = stream;
  RecvHandle handle(std::move(comm), slot, &slots_, tracer_, span);
  handle.owner_ = this;
  return handle;
}

Payload Comm::recv(int src, int channel) {
  return irecv(src, channel).wait();
}

Payload Comm::sendrecv(int dst, Payload payload, int src, int channel) {
  RecvHandle in = irecv(src, channel);
  SendHandle out = isend(dst, std::move(payload), channel);
  Payload received = in.wait();
  out.wait();
  return received;
}

void Comm::wait_all(std::vector<SendHandle>& sends) {
  for (auto& s : sends) s.wait();
}

std::size_t Comm::next_recorded_choice(std::size_t handles) {
  if (chosen_ == nullptr || next_chosen_ >= chosen_->size() || (*chosen_)[next_chosen_] >= handles)
    throw std::logic_error(
        fmt::format("replay: rank {} called wait_any more often, or on other handles, "
                    "than in the step it replays",
                    rank_));
  return (*chosen_)[next_chosen_++];
}

std::size_t Comm::wait_any(const std::vector<RecvHandle>& recvs) {
  Comm* owner = nullptr;
  for (const auto& r : recvs)
    if (r.valid()) owner = r.owner_;
  if (owner && owner->local_) {
    // The choice SimGrid made in the recorded step, which had the same transfers.
    const std::size_t i = owner->next_recorded_choice(recvs.size());
    if (!recvs[i].valid()) throw std::logic_error("replay: wait_any chose a handle that is not pending");
    owner->tape_.chosen.push_back(static_cast<std::uint32_t>(i));  // replaying implies recording
    return i;
  }
  std::vector<sg4::CommPtr> comms;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    if (!recvs[i].valid()) continue;
    comms.push_back(recvs[i].comm_);
    index.push_back(i);
  }
  if (comms.empty()) throw std::logic_error("Comm::wait_any without a pending receive");
  const ssize_t done = sg4::Comm::wait_any(comms);
  if (done < 0) throw std::runtime_error("Comm::wait_any failed");
  const std::size_t chosen = index[static_cast<std::size_t>(done)];
  if (owner && owner->recording_) owner->tape_.chosen.push_back(static_cast<std::uint32_t>(chosen));
  return chosen;
}

}  // namespace aggsim
