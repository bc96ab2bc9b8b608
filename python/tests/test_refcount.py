"""No reference or memory leak over 10^5 calls."""
import gc
import sys

import numpy as np

import hhg

CALLS = 100_000


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_no_leak_over_many_calls():
    bx = np.array([[0, 0, 0, 1, 1, 1], [0.5, 0.5, 0.5, 2, 2, 2]], dtype=np.float64)
    pts = np.ascontiguousarray(bx[:, :3])
    g = hhg.HashGrids()
    ids = g.insert(bx)
    refs = [sys.getrefcount(x) for x in (bx, pts, ids, g)]
    for _ in range(2000):  # warm up allocator pools and pybind11 caches
        hhg.pairs(bx, workers=1)
    gc.collect()
    start = rss_bytes()
    for i in range(CALLS):
        p = hhg.pairs(bx, workers=1)
        if i % 4 == 0:
            new = g.insert(bx)
            g.move(new, bx)
            g.remove(new)
            g.overlapping(bx)
            g.nearest(pts, 1)
        if i % 8 == 0:
            hhg.query_pairs(pts, 1.0, workers=1)
            try:
                g.remove([7])  # the error path too
            except hhg.Error:
                pass
    gc.collect()
    grown = rss_bytes() - start
    assert p.tolist() == [[0, 1]] and len(g) == 2
    assert [sys.getrefcount(x) for x in (bx, pts, ids, g)] == refs
    assert grown < 8 << 20, f"RSS grew by {grown} bytes over {CALLS} calls"


def test_results_own_their_memory():
    p = hhg.pairs(np.zeros((3, 4)))
    assert p.base is not None and p.flags.c_contiguous and p.flags.writeable
    before = sys.getrefcount(p)
    q = p[:1]
    del q
    assert sys.getrefcount(p) == before
