// The built-in executors: every item run exactly once, worker indices in
// range, exceptions carried to the caller, nested calls run inline.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "hhg/executor.hpp"

namespace {

void covers_every_item_once(hhg::executor& ex, std::size_t count, std::size_t min_range) {
  std::vector<std::atomic<int>> hits(count);
  std::atomic<bool> bad_worker{false}, short_range{false};
  ex.parallel_for(count, min_range, [&](std::size_t b, std::size_t e, unsigned w) {
    if (w >= ex.workers()) bad_worker = true;
    if (e - b < min_range && e != count) short_range = true;
    for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
  });
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(hits[i].load(), 1) << "item " << i;
  EXPECT_FALSE(bad_worker);
  EXPECT_FALSE(short_range);
}

TEST(ExecutorThreads, PoolRunsEveryItemOnceForManyShapes) {
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    hhg::thread_pool pool(threads);
    EXPECT_EQ(pool.workers(), threads);
    for (std::size_t count : {0, 1, 2, 7, 100, 10007})
      for (std::size_t min_range : {1, 3, 64}) covers_every_item_once(pool, count, min_range);
  }
  hhg::serial_executor serial;
  covers_every_item_once(serial, 1000, 1);
}

TEST(ExecutorThreads, PoolUsesMoreThanOneWorker) {
  hhg::thread_pool pool(4);
  std::vector<std::atomic<int>> by_worker(4);
  // Many small ranges, each slow enough that one thread cannot take them all
  // before the others wake.
  for (int round = 0; round < 50; ++round)
    pool.parallel_for(4000, 1, [&](std::size_t b, std::size_t e, unsigned w) {
      volatile double x = 0;
      for (std::size_t i = b; i < e; ++i)
        for (int k = 0; k < 200; ++k) x = x + 1.0;
      by_worker[w].fetch_add(1);
    });
  int used = 0;
  for (auto& c : by_worker) used += c.load() > 0;
  EXPECT_GE(used, 2);
}

TEST(ExecutorThreads, ExceptionReachesTheCallerAndPoolStaysUsable) {
  hhg::thread_pool pool(3);
  EXPECT_THROW(pool.parallel_for(1000, 1,
                                 [&](std::size_t b, std::size_t, unsigned) {
                                   if (b >= 500) throw std::runtime_error("range failed");
                                 }),
               std::runtime_error);
  covers_every_item_once(pool, 1000, 1);
}

TEST(ExecutorThreads, NestedCallRunsInTheCallingWorker) {
  hhg::thread_pool pool(3);
  std::atomic<int> inner{0}, mismatched{0};
  pool.parallel_for(64, 1, [&](std::size_t b, std::size_t e, unsigned w) {
    for (std::size_t i = b; i < e; ++i)
      pool.parallel_for(10, 1, [&](std::size_t ib, std::size_t ie, unsigned iw) {
        if (iw != w) mismatched.fetch_add(1);
        inner.fetch_add(static_cast<int>(ie - ib));
      });
  });
  EXPECT_EQ(inner.load(), 640);
  EXPECT_EQ(mismatched.load(), 0);
}

}  // namespace
