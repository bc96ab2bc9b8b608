"""hhg.neighbors and hhg.query_pairs against scipy.spatial.cKDTree and brute force."""
import numpy as np
import pytest
from scipy.spatial import cKDTree

import hhg


def points(kind, n, dim, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        p = rng.uniform(0, 10, (n, dim))
    elif kind == "lattice":  # distances exactly r on an integer lattice, duplicates
        p = rng.integers(0, 6, (n, dim)).astype(float)
    elif kind == "far":
        p = (1e9 if dtype == np.float64 else 1e4) + rng.uniform(0, 10, (n, dim))
    elif kind == "clustered":  # spreads over 8 decades
        p = rng.normal(size=(n, dim)) * 10.0 ** rng.uniform(-4, 4, (n, 1))
    return np.ascontiguousarray(p.astype(dtype))


def brute_within(a, b, r):
    d = a[:, None, :].astype(float) - b[None, :, :].astype(float)
    return np.sum(d * d, axis=2) <= r * r


def csr_lists(idx, off):
    return [idx[off[i]:off[i + 1]].tolist() for i in range(len(off) - 1)]


@pytest.mark.parametrize("kind", ["uniform", "lattice", "far", "clustered"])
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_neighbors_and_query_pairs_brute_force(kind, dim, dtype):
    p = points(kind, 400, dim, dtype, seed=dim)
    for r in (0.0, 1.0, 2.5):
        m = brute_within(p, p, r)
        np.fill_diagonal(m, False)
        for workers in (1, 2):
            idx, off = hhg.neighbors(p, r, workers=workers)
            assert idx.dtype == np.int64 and off.dtype == np.int64 and len(off) == len(p) + 1
            assert csr_lists(idx, off) == [np.nonzero(row)[0].tolist() for row in m]
        i, j = np.nonzero(np.triu(m, 1))
        for workers in (1, 2):
            np.testing.assert_array_equal(hhg.query_pairs(p, r, workers=workers), np.stack([i, j], 1).reshape(-1, 2))
        q = points(kind, 150, dim, dtype, seed=9)
        mq = brute_within(q, p, r)
        for workers in (1, 2):
            idx, off = hhg.neighbors(p, r, other=q, workers=workers)
            assert len(off) == len(q) + 1
            assert csr_lists(idx, off) == [np.nonzero(row)[0].tolist() for row in mq]


@pytest.mark.parametrize("dim", [2, 3])
def test_against_ckdtree(dim):
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 1, (20000, dim))
    r = 0.02 if dim == 2 else 0.07
    tree = cKDTree(p)
    ref = tree.query_pairs(r, output_type="ndarray")
    ref = ref[np.lexsort((ref[:, 1], ref[:, 0]))]
    for workers in (1, 2):
        got = hhg.query_pairs(p, r, workers=workers)
        assert got.shape == ref.shape and got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref)
    q = rng.uniform(0, 1, (3000, dim))
    idx, off = hhg.neighbors(p, r, other=q, workers=2)
    assert csr_lists(idx, off) == [sorted(x) for x in tree.query_ball_point(q, r)]
    idx, off = hhg.neighbors(p, r)
    want = [sorted(set(x) - {i}) for i, x in enumerate(tree.query_ball_point(p, r))]
    assert csr_lists(idx, off) == want


def test_neighbors_errors():
    p = points("uniform", 50, 3, np.float64)
    bad = p.copy()
    bad[7, 2] = np.nan
    cases = [
        (hhg.Error, lambda: hhg.neighbors(bad, 1.0)),
        (hhg.Error, lambda: hhg.neighbors(p, -1.0)),
        (hhg.Error, lambda: hhg.neighbors(p, np.nan)),
        (hhg.Error, lambda: hhg.neighbors(p, np.inf)),
        (hhg.Error, lambda: hhg.neighbors(p, 1.0, other=bad)),
        (hhg.Error, lambda: hhg.query_pairs(bad, 1.0)),
        (ValueError, lambda: hhg.neighbors(np.zeros((5, 4)), 1.0)),
        (ValueError, lambda: hhg.neighbors(p, 1.0, other=np.zeros((5, 2)))),
        (ValueError, lambda: hhg.query_pairs(np.zeros(3), 1.0)),
        (TypeError, lambda: hhg.query_pairs(np.array([["a", "b"]]), 1.0)),
        (ValueError, lambda: hhg.neighbors(p, 1.0, workers=0)),
    ]
    keep = p.copy()
    for exc, call in cases:
        with pytest.raises(exc):
            call()
    np.testing.assert_array_equal(p, keep)


def test_empty_inputs():
    idx, off = hhg.neighbors(np.zeros((0, 3)), 1.0)
    assert len(idx) == 0 and off.tolist() == [0]
    assert hhg.query_pairs(np.zeros((0, 2)), 1.0).shape == (0, 2)
    idx, off = hhg.neighbors(np.zeros((0, 3)), 1.0, other=np.ones((2, 3)))
    assert off.tolist() == [0, 0, 0]


def test_query_pairs_at_the_radius_is_exact_for_any_worker_count():
    # |p - q| > r exactly, but the rounded d^2 = fl(dx^2 + dy^2) <= fl(r^2): the
    # one-worker path decided in rounded doubles until stop 79 and reported
    # the pair, two workers (exact, hhg::within) did not
    pts = np.array([[0.0, 0.0], [0.7296554464299441, 0.17565562060255901]])
    r = 0.7505011442723796
    dx, dy = pts[1]
    assert dx * dx + dy * dy <= r * r  # the rounded test says "within"
    from fractions import Fraction as F
    assert F(dx) ** 2 + F(dy) ** 2 > F(r) ** 2  # it is not
    for workers in (1, 2):
        assert hhg.query_pairs(pts, r, workers=workers).shape == (0, 2)
        assert hhg.neighbors(pts, r, workers=workers)[1].tolist() == [0, 0, 0]
    # and at exactly r (a 3-4-5 triangle) the pair is in, for both
    pts = np.array([[0.0, 0.0], [3.0, 4.0], [3.0, 4.0 + 2**-40]])
    for workers in (1, 2):
        assert hhg.query_pairs(pts, 5.0, workers=workers).tolist() == [[0, 1], [1, 2]]


def test_query_pairs_near_the_radius_against_exact_brute_force():
    # points on a circle of radius about r around others: many rounded
    # distances fall within a few ulps of r
    from fractions import Fraction as F
    rng = np.random.default_rng(5)
    c = rng.uniform(0, 4, (60, 2))
    ang = rng.uniform(0, 2 * np.pi, (60, 1))
    r = 0.75
    q = c + r * np.hstack([np.cos(ang), np.sin(ang)])
    p = np.vstack([c, q])
    fr = [[F(float(v)) for v in row] for row in p]
    want = [[i, j] for i in range(len(p)) for j in range(i + 1, len(p))
            if (fr[i][0] - fr[j][0]) ** 2 + (fr[i][1] - fr[j][1]) ** 2 <= F(r) ** 2]
    for workers in (1, 2):
        assert hhg.query_pairs(p, r, workers=workers).tolist() == want
