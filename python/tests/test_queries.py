"""HashGrids' batched queries against numpy brute force."""
import numpy as np
import pytest

import hhg
from scenes import KINDS, box_distance, boxes, csr_sets, overlap_matrix


def grid(kind, n, dim, dtype, seed=0, workers=1):
    bx = boxes(kind, n, dim, np.dtype(dtype), seed)
    g = hhg.HashGrids(dim=dim, dtype=dtype, workers=workers, activation_threshold=16)
    ids = g.insert(bx)
    return g, bx, ids


def expect_sets(mask, ids):
    return [set(ids[np.nonzero(row)[0]].tolist()) for row in mask]


def check_csr(idx, off, q):
    assert idx.dtype == np.int64 and off.dtype == np.int64
    assert len(off) == q + 1 and off[0] == 0 and off[-1] == len(idx) and np.all(np.diff(off) >= 0)


CASES = [(k, d, t) for k in KINDS for d in (2, 3) for t in ("float32", "float64")]


@pytest.mark.parametrize("kind, dim, dtype", CASES)
def test_overlapping_containing_in_sphere(kind, dim, dtype):
    g, bx, ids = grid(kind, 300, dim, dtype, seed=1)
    q = boxes(kind, 120, dim, np.dtype(dtype), seed=2)
    q[:10] = bx[:10]  # queries equal to stored boxes: touching everywhere
    q[10:20, dim:] = q[10:20, :dim]  # point queries
    idx, off = g.overlapping(q)
    check_csr(idx, off, len(q))
    assert csr_sets(idx, off) == expect_sets(overlap_matrix(q, bx), ids)

    pts = np.ascontiguousarray(q[:, :dim])
    pts[:10] = bx[:10, :dim]  # corners: on the boundary
    idx, off = g.containing(pts)
    check_csr(idx, off, len(pts))
    pb = np.hstack([pts, pts])
    assert csr_sets(idx, off) == expect_sets(overlap_matrix(pb, bx), ids)

    if kind != "far":  # far: the double distance of float32 boxes is not the oracle's concern here
        radii = np.random.default_rng(3).uniform(0, 2, len(pts))
        radii[:5] = 0
        idx, off = g.in_sphere(pts, radii)
        check_csr(idx, off, len(pts))
        lo, hi = bx[None, :, :dim].astype(float), bx[None, :, dim:].astype(float)
        pq = pts[:, None, :].astype(float)
        with np.errstate(invalid="ignore"):
            gap = np.where(pq < lo, lo - pq, np.where(pq > hi, pq - hi, 0.0))
        within = np.sum(gap * gap, axis=2) <= (radii * radii)[:, None]  # the C++ predicate, in double
        assert csr_sets(idx, off) == expect_sets(within, ids)
        idx2, off2 = g.in_sphere(pts, 0.5)  # a scalar radius is broadcast
        assert csr_sets(idx2, off2) == csr_sets(*g.in_sphere(pts, np.full(len(pts), 0.5)))


def ray_entry(o, d, t_max, b, dim):
    tn, tf = 0.0, t_max
    for i in range(dim):
        lo, hi = float(b[i]), float(b[dim + i])
        if d[i] == 0:
            if o[i] < lo or o[i] > hi:
                return -1.0
            continue
        t1, t2 = (lo - o[i]) / d[i], (hi - o[i]) / d[i]
        if d[i] < 0:
            t1, t2 = t2, t1
        tn, tf = max(tn, t1), min(tf, t2)
        if tn > tf:
            return -1.0
    return tn


@pytest.mark.parametrize("kind", ["random", "touching", "zero_size", "decades", "unbounded"])
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rays(kind, dim, dtype):
    g, bx, ids = grid(kind, 150, dim, dtype, seed=4)
    rng = np.random.default_rng(5)
    q = 40
    o = rng.uniform(-2, 12, (q, dim)).astype(dtype)
    d = rng.normal(size=(q, dim)).astype(dtype)
    d[:5, 1:] = 0  # axis-aligned rays (grazing faces on lattices)
    mt = np.where(rng.random(q) < 0.5, np.inf, rng.uniform(0, 10, q))
    idx, ts, off = g.ray_hits(o, d, mt)
    check_csr(idx, off, q)
    fid, ft = g.first_ray_hit(o, d, mt)
    for r in range(q):
        ent = np.array([ray_entry(o[r].astype(float), d[r].astype(float), mt[r], b, dim) for b in bx])
        hit = np.nonzero(ent >= 0)[0]
        got = dict(zip(idx[off[r]:off[r + 1]].tolist(), ts[off[r]:off[r + 1]].tolist()))
        assert set(got) == set(ids[hit].tolist())
        for h in hit:
            assert got[ids[h]] == pytest.approx(ent[h], rel=1e-12, abs=1e-12)
        assert np.all(np.diff(ts[off[r]:off[r + 1]]) >= 0)  # in entry order
        if len(hit):
            assert ft[r] == pytest.approx(ent[hit].min(), rel=1e-12, abs=1e-12) and fid[r] in got
            assert got[fid[r]] == ft[r]
        else:
            assert fid[r] == -1 and ft[r] == np.inf


@pytest.mark.parametrize("kind", ["random", "touching", "zero_size", "decades", "far"])
@pytest.mark.parametrize("dim", [2, 3])
def test_nearest(kind, dim):
    for dtype in ("float32", "float64"):
        g, bx, ids = grid(kind, 200, dim, dtype, seed=6)
        pts = boxes(kind, 50, dim, np.dtype(dtype), seed=7)[:, :dim] + np.asarray(0.3, dtype)
        for k in (1, 5, 250):
            nid, nd = g.nearest(pts, k)
            assert nid.shape == (50, k) and nd.shape == (50, k) and nid.dtype == np.int64
            ref = box_distance(bx, pts)
            for r in range(50):
                want = np.sort(ref[r])[:k]
                m = min(k, len(bx))
                np.testing.assert_allclose(nd[r, :m], want, rtol=1e-12, atol=0)
                assert np.all(nid[r, m:] == -1) and np.all(np.isinf(nd[r, m:]))
                pos = {i: j for j, i in enumerate(ids.tolist())}
                np.testing.assert_allclose(ref[r, [pos[i] for i in nid[r, :m]]], nd[r, :m], rtol=1e-12)


def test_queries_with_workers_equal_serial():
    g1, bx, _ = grid("random", 3000, 3, "float64", seed=8, workers=1)
    g2 = hhg.HashGrids(workers=2, activation_threshold=16)
    g2.insert(bx)
    q = boxes("random", 500, 3, np.float64, seed=9)
    for a, b in [(g1.overlapping(q), g2.overlapping(q)), (g1.containing(q[:, :3]), g2.containing(q[:, :3])),
                 (g1.in_sphere(q[:, :3], 1.0), g2.in_sphere(q[:, :3], 1.0)),
                 (g1.nearest(q[:, :3], 4), g2.nearest(q[:, :3], 4)),
                 (g1.ray_hits(q[:, :3], q[:, 3:] - 5), g2.ray_hits(q[:, :3], q[:, 3:] - 5)),
                 (g1.first_ray_hit(q[:, :3], q[:, 3:] - 5), g2.first_ray_hit(q[:, :3], q[:, 3:] - 5))]:
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_query_errors_change_nothing():
    g, bx, ids = grid("random", 100, 3, "float64")
    before = (len(g), g.pairs().tolist())
    nanq = bx[:5].copy()
    nanq[2, 1] = np.nan
    cases = [
        (hhg.Error, lambda: g.overlapping(nanq)),
        (hhg.Error, lambda: g.in_sphere(nanq[:, :3], 1.0)),
        (hhg.Error, lambda: g.in_sphere(bx[:3, :3], -1.0)),
        (hhg.Error, lambda: g.in_sphere(bx[:3, :3], np.nan)),
        (ValueError, lambda: g.in_sphere(bx[:3, :3], [1.0, 2.0])),
        (hhg.Error, lambda: g.ray_hits(nanq[:, :3], bx[:5, :3])),
        (hhg.Error, lambda: g.ray_hits(bx[:5, :3], bx[:5, :3], -1.0)),
        (hhg.Error, lambda: g.first_ray_hit(bx[:5, :3], np.full((5, 3), np.inf))),
        (hhg.Error, lambda: g.nearest(nanq[:, :3], 2)),
        (ValueError, lambda: g.nearest(bx[:, :3], -1)),
        (ValueError, lambda: g.overlapping(bx[:, :4])),
        (ValueError, lambda: g.containing(bx)),
        (ValueError, lambda: g.ray_hits(bx[:5, :3], bx[:4, :3])),
        (TypeError, lambda: g.containing(np.array([["a", "b", "c"]]))),
    ]
    for exc, call in cases:
        with pytest.raises(exc):
            call()
        assert (len(g), g.pairs().tolist()) == before
    g.validate()


def test_empty_queries():
    g = hhg.HashGrids(dim=2)
    idx, off = g.overlapping(np.zeros((0, 4)))
    assert len(idx) == 0 and off.tolist() == [0]
    idx, off = g.containing([[0.0, 0.0]])
    assert len(idx) == 0 and off.tolist() == [0, 0]
    nid, nd = g.nearest([[0.0, 0.0]], 2)
    assert nid.tolist() == [[-1, -1]] and np.all(np.isinf(nd))


def test_concurrent_threads_query_while_another_moves():
    """The GIL is released during the work; the structure's lock keeps queries and changes apart."""
    import threading
    bx = boxes("random", 4000, 3, np.float64, seed=11)
    g = hhg.HashGrids(workers=1)
    ids = g.insert(bx)
    q = boxes("random", 300, 3, np.float64, seed=12)
    shifted = bx + 0.25
    errors = []

    def query():
        try:
            for _ in range(30):
                idx, off = g.overlapping(q)
                assert len(off) == len(q) + 1
                n = len(idx)
                assert n == off[-1]
                g.nearest(q[:50, :3], 3)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=query) for _ in range(3)]
    for t in threads:
        t.start()
    for k in range(30):
        g.move(ids, shifted if k % 2 == 0 else bx)
        g.pairs()
    for t in threads:
        t.join()
    assert not errors
    g.validate()
    final = bx  # 30 moves: the last (k = 29) put the boxes back
    from scenes import overlap_matrix
    assert csr_sets(*g.overlapping(q)) == expect_sets(overlap_matrix(q, final), ids)
