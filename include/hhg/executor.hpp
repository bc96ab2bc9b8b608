// hhg/executor.hpp: how hhg runs work on several cores.
//
// hhg hands out ranges of independent work items; an executor runs them. The
// built-in thread_pool runs them on std::threads; an engine with a job system
// of its own (Box2D v3's enqueueTask/finishTask, Jolt's JobSystem, TBB) derives
// from executor and runs the ranges there. Results never depend on the
// executor: hhg cuts its work into chunks whose boundaries depend only on the
// input, each chunk writes its own output, and outputs are joined in chunk
// order. The same pairs come out in the same order for any executor and any
// number of workers.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "hhg/function_ref.hpp"

namespace hhg {

/// The work of one range: items [begin, end), run by worker `worker`
/// (0 <= worker < executor::workers()). Two ranges run at the same time never
/// share a worker index, so per-worker scratch indexed by it needs no lock.
using range_fn = function_ref<void(std::size_t begin, std::size_t end, unsigned worker)>;

/// Runs ranges of work items, possibly at the same time.
class executor {
 public:
  virtual ~executor() = default;
  /// How many ranges may run at once; worker indices are below it. At least 1.
  virtual unsigned workers() const noexcept = 0;
  /// Calls `fn` on disjoint ranges that together cover [0, count), each of at
  /// least `min_range` items except possibly the last, in any order and on any
  /// worker, and returns when every range is done. When `fn` throws, ranges not
  /// yet started may be skipped and the first exception is rethrown here after
  /// the others have finished. Called from inside a range of the same
  /// executor, it runs the whole count in the calling worker.
  virtual void parallel_for(std::size_t count, std::size_t min_range, range_fn fn) = 0;
};

/// Runs every range on the calling thread: fn(0, count, 0).
class serial_executor final : public executor {
 public:
  unsigned workers() const noexcept override { return 1; }
  void parallel_for(std::size_t count, std::size_t min_range, range_fn fn) override;
};

/// A small pool of std::threads: the calling thread is worker 0 and
/// `threads - 1` pool threads are workers 1, 2, .... With one thread no thread
/// is started. Ranges are handed out from a shared counter in pieces of about
/// count / (64 * threads) items (at least min_range), so a slow core takes
/// fewer and no worker waits long for the last piece. Calls from different
/// threads are run one after the other.
class thread_pool final : public executor {
 public:
  /// `threads` = 0 means every core (std::thread::hardware_concurrency()).
  explicit thread_pool(unsigned threads = 0);
  ~thread_pool() override;
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  unsigned workers() const noexcept override { return threads_; }
  void parallel_for(std::size_t count, std::size_t min_range, range_fn fn) override;

  /// The number of cores (std::thread::hardware_concurrency(), at least 1).
  static unsigned cores() noexcept;

 private:
  struct job;
  void work(unsigned worker);
  static void run(job& j, unsigned worker);

  unsigned threads_;
  std::vector<std::thread> pool_;
  std::mutex call_lock_;  // one parallel_for at a time
  std::mutex lock_;
  std::condition_variable start_, done_;
  job* job_ = nullptr;
  std::size_t generation_ = 0;
  unsigned finished_ = 0;
  bool stop_ = false;
};

}  // namespace hhg
