"""Benchmark of the Python module (not a test): one run reports

1. hhg.pairs on 10^5 and 10^6 boxes against the C++ time of the same work
   (hhg._hhg._time_pairs runs the identical C++ pipeline with no Python in
   it): the binding's overhead, goal <= 20 %;
2. hhg.query_pairs / hhg.neighbors against cKDTree.query_pairs /
   query_ball_point on 10^5 and 10^6 uniform points with about 30 neighbours
   each, one worker on both sides (goal: hhg >= 3x faster). cKDTree's build
   time is included, as hhg's is.

    python bench/python/bench_python.py [--quick] [--workers 1]
"""
import argparse
import time

import numpy as np
from scipy.spatial import cKDTree

import hhg


def best(f, repeats):
    t = float("inf")
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        t = min(t, time.perf_counter() - t0)
    return t, out


def uniform_boxes(n, rng):
    # equal cubes in a cube sized for about 2 overlapping partners per box
    side = (n / 0.25) ** (1 / 3)
    lo = rng.uniform(0, side, (n, 3))
    return np.hstack([lo, lo + 1.0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10^4 and 10^5 instead of 10^5 and 10^6")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    sizes = [10**4, 10**5] if args.quick else [10**5, 10**6]
    rng = np.random.default_rng(1)
    w = args.workers
    print(f"hhg {hhg.__version__}, workers={w}, best of {args.repeats}")

    print("\n== hhg.pairs vs the same C++ work ==")
    print(f"{'boxes':>9} {'pairs':>9} {'python s':>9} {'C++ s':>9} {'overhead':>9}")
    for n in sizes:
        bx = uniform_boxes(n, rng)
        tp, p = best(lambda: hhg.pairs(bx, workers=w), args.repeats)
        tc = hhg._hhg._time_pairs(bx, "hhg", w, args.repeats)
        print(f"{n:>9} {len(p):>9} {tp:>9.4f} {tc:>9.4f} {100 * (tp / tc - 1):>8.1f}%")

    print("\n== hhg.query_pairs / hhg.neighbors vs scipy cKDTree (uniform points, ~30 neighbours) ==")
    print(f"{'points':>9} {'call':<34} {'hhg s':>8} {'cKDTree s':>10} {'speed-up':>9}")
    for n in sizes:
        p = rng.uniform(0, 1, (n, 3))
        r = (30 / n / (4 / 3 * np.pi)) ** (1 / 3)  # ~30 neighbours in the ball
        th, qp = best(lambda: hhg.query_pairs(p, r, workers=w), args.repeats)
        tk, kp = best(lambda: cKDTree(p).query_pairs(r, output_type="ndarray"), 1 if n > 10**5 else args.repeats)
        assert len(qp) == len(kp)
        print(f"{n:>9} {'query_pairs(p, r)':<34} {th:>8.3f} {tk:>10.3f} {tk / th:>8.1f}x")
        th, (idx, off) = best(lambda: hhg.neighbors(p, r, workers=w), args.repeats)
        tk, lists = best(lambda: cKDTree(p).query_ball_point(p, r, workers=w), 1)
        assert len(idx) + n == sum(len(x) for x in lists)
        print(f"{n:>9} {'neighbors(p, r) / query_ball_point':<34} {th:>8.3f} {tk:>10.3f} {tk / th:>8.1f}x"
              f"   ({len(idx) / n:.1f} neighbours each)")
        tk2, lists = best(lambda: cKDTree(p).query_ball_point(p, r, workers=w, return_sorted=False), 1)
        print(f"{n:>9} {'  vs query_ball_point unsorted':<34} {th:>8.3f} {tk2:>10.3f} {tk2 / th:>8.1f}x")


if __name__ == "__main__":
    main()
