#include "sim/engine/solver_stack.hpp"

#include <fmt/format.h>
#include <pthread.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "sim/core/error.hpp"

namespace aggsim {

namespace {

struct ThreadWork {
  const std::function<void()>* work = nullptr;
  std::exception_ptr error;
};

void* run_work(void* arg) {
  auto* w = static_cast<ThreadWork*>(arg);
  try {
    (*w->work)();
  } catch (...) {
    w->error = std::current_exception();
  }
  return nullptr;
}

// Starts `w` on a thread with `stack_bytes` of stack; false when the system refuses that size.
bool start_thread(pthread_t& thread, ThreadWork& w, std::size_t stack_bytes) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) throw std::runtime_error("pthread_attr_init failed");
  int rc = pthread_attr_setstacksize(&attr, stack_bytes);
  if (rc == 0) rc = pthread_create(&thread, &attr, run_work, &w);
  pthread_attr_destroy(&attr);
  if (rc == 0) return true;
  if (rc == EAGAIN || rc == ENOMEM || rc == EINVAL) return false;
  throw std::runtime_error(fmt::format("cannot start the simulation thread: {}", std::strerror(rc)));
}

}  // namespace

void run_on_simulation_stack(const std::function<void()>& work) {
  ThreadWork w;
  w.work = &work;
  pthread_t thread{};
  std::size_t stack_bytes = kSimulationStackBytes;
  while (!start_thread(thread, w, stack_bytes)) {
    if (stack_bytes / 2 < kLeastSimulationStackBytes)
      throw std::runtime_error(fmt::format(
          "cannot start the simulation thread: the system refuses a stack of {} MiB (address space or "
          "memory limits: ulimit -v, vm.overcommit_memory)",
          stack_bytes >> 20));
    stack_bytes /= 2;
  }
  const int rc = pthread_join(thread, nullptr);
  if (rc != 0) throw std::runtime_error(fmt::format("simulation thread: {}", std::strerror(rc)));
  if (w.error) std::rethrow_exception(w.error);
}

std::size_t solver_stack_link_capacity() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
  void* base = nullptr;
  std::size_t size = 0;
  pthread_attr_getstack(&attr, &base, &size);
  pthread_attr_destroy(&attr);
  return size > kStackBesidesSolverBytes ? (size - kStackBesidesSolverBytes) / kSolverFrameBytes : 0;
}

void check_solver_stack(std::size_t links, const std::string& platform) {
  const std::size_t capacity = solver_stack_link_capacity();
  if (links <= capacity) return;
  throw InputError(fmt::format(
      "{}: {} links: SimGrid's bandwidth solver recurses once per link a change reaches ({} bytes of "
      "stack each), and the simulation's stack holds {} of them; use a platform with fewer links",
      platform, links, kSolverFrameBytes, capacity));
}

}  // namespace aggsim
