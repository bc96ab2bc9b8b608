// The built-in executors. The thread pool keeps its threads parked on a
// condition variable between calls; a call publishes a job (a counter over the
// items), wakes every thread, works on the job itself as worker 0, and waits
// until every pool thread has left the job. Because the caller waits for all
// of them, a thread never misses a job and never sees two at once.
#include "hhg/executor.hpp"

#include <algorithm>
#include <atomic>

namespace hhg {

namespace {
// The pool whose range the current thread is running (for nested calls).
thread_local const executor* running_in = nullptr;
thread_local unsigned running_worker = 0;
}  // namespace

void serial_executor::parallel_for(std::size_t count, std::size_t, range_fn fn) {
  if (count > 0) fn(0, count, 0);
}

struct thread_pool::job {
  job(std::size_t c, std::size_t p, range_fn f) : count(c), piece(p), fn(f) {}
  std::size_t count;
  std::size_t piece;
  range_fn fn;
  std::atomic<std::size_t> next{0};
  std::mutex error_lock;
  std::exception_ptr error;
};

unsigned thread_pool::cores() noexcept { return std::max(1u, std::thread::hardware_concurrency()); }

thread_pool::thread_pool(unsigned threads) : threads_(threads == 0 ? cores() : threads) {
  pool_.reserve(threads_ - 1);
  try {
    for (unsigned w = 1; w < threads_; ++w) pool_.emplace_back([this, w] { work(w); });
  } catch (...) {
    {
      std::lock_guard<std::mutex> g(lock_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto& t : pool_) t.join();
    throw;
  }
}

thread_pool::~thread_pool() {
  {
    std::lock_guard<std::mutex> g(lock_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : pool_) t.join();
}

void thread_pool::run(job& j, unsigned worker) {
  for (;;) {
    const std::size_t b = j.next.fetch_add(j.piece, std::memory_order_relaxed);
    if (b >= j.count) return;
    const std::size_t e = std::min(j.count, b + j.piece);
    try {
      j.fn(b, e, worker);
    } catch (...) {
      std::lock_guard<std::mutex> g(j.error_lock);
      if (!j.error) j.error = std::current_exception();
      j.next.store(j.count, std::memory_order_relaxed);
      return;
    }
  }
}

void thread_pool::work(unsigned worker) {
  running_in = this;
  running_worker = worker;
  std::size_t seen = 0;
  for (;;) {
    job* j;
    {
      std::unique_lock<std::mutex> g(lock_);
      start_.wait(g, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      j = job_;
    }
    run(*j, worker);
    {
      std::lock_guard<std::mutex> g(lock_);
      if (++finished_ == pool_.size()) done_.notify_one();
    }
  }
}

void thread_pool::parallel_for(std::size_t count, std::size_t min_range, range_fn fn) {
  if (count == 0) return;
  min_range = std::max<std::size_t>(min_range, 1);
  if (running_in == this || pool_.empty() || count <= min_range) {
    // Nested call, one thread, or one range: run here.
    fn(0, count, running_in == this ? running_worker : 0);
    return;
  }
  std::lock_guard<std::mutex> call(call_lock_);
  job j(count, std::max(min_range, (count + 64 * threads_ - 1) / (64 * threads_)), fn);
  {
    std::lock_guard<std::mutex> g(lock_);
    job_ = &j;
    finished_ = 0;
    ++generation_;
  }
  start_.notify_all();
  running_in = this;
  running_worker = 0;
  run(j, 0);
  running_in = nullptr;
  {
    std::unique_lock<std::mutex> g(lock_);
    done_.wait(g, [&] { return finished_ == pool_.size(); });
    job_ = nullptr;
  }
  if (j.error) std::rethrow_exception(j.error);
}

}  // namespace hhg
