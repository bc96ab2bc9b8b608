"""Scenes and brute-force oracles shared by the tests (numpy only)."""
import numpy as np

KINDS = ["random", "touching", "zero_size", "decades", "far", "unbounded"]


def boxes(kind, n, dim, dtype, seed=0):
    """(n, 2*dim) boxes of the given kind."""
    rng = np.random.default_rng(seed)
    if kind == "random":
        lo = rng.uniform(0, 10, (n, dim))
        hi = lo + rng.uniform(0.1, 1.5, (n, dim))
    elif kind == "touching":  # unit cells of an integer lattice: neighbours share faces, edges, corners
        side = int(np.ceil(n ** (1 / dim)))
        idx = np.stack(np.unravel_index(np.arange(n), (side,) * dim), axis=1).astype(float)
        lo, hi = idx, idx + 1
    elif kind == "zero_size":  # points on a coarse lattice: many coincide; half are unit cells
        lo = rng.integers(0, 4, (n, dim)).astype(float)
        hi = lo + (rng.random((n, 1)) < 0.5)
    elif kind == "decades":  # sizes over 8 decades
        size = 10.0 ** rng.uniform(-4, 4, (n, 1))
        lo = rng.uniform(0, 1e3, (n, dim))
        hi = lo + size * rng.uniform(0.5, 1, (n, dim))
    elif kind == "far":  # far from the origin (still exactly representable offsets)
        off = 1e12 if dtype == np.float64 else 1e6
        lo = off + rng.uniform(0, 20, (n, dim))
        hi = lo + rng.uniform(0.5, 3, (n, dim))
    elif kind == "unbounded":  # a few infinite slabs among random boxes
        lo = rng.uniform(0, 10, (n, dim))
        hi = lo + rng.uniform(0.1, 1.5, (n, dim))
        k = max(1, n // 20)
        lo[:k, 0], hi[:k, 0] = -np.inf, np.inf
        hi[k:2 * k, 1] = np.inf
    else:
        raise ValueError(kind)
    return np.ascontiguousarray(np.hstack([lo, hi]).astype(dtype))


def overlap_matrix(a, b):
    """m[i, j] = box a[i] overlaps box b[j] (closed), compared in the arrays' dtype."""
    d = a.shape[1] // 2
    return np.all((a[:, None, :d] <= b[None, :, d:]) & (b[None, :, :d] <= a[:, None, d:]), axis=2)


def brute_pairs(bx):
    """(M, 2) int64 index pairs i < j, sorted."""
    m = overlap_matrix(bx, bx)
    i, j = np.nonzero(np.triu(m, 1))
    return np.stack([i, j], axis=1).astype(np.int64).reshape(-1, 2)


def box_distance(bx, p):
    """Euclidean distance from each point p[q] to each box bx[i], in double: (Q, N)."""
    d = bx.shape[1] // 2
    lo, hi = bx[None, :, :d].astype(float), bx[None, :, d:].astype(float)
    q = p[:, None, :].astype(float)
    with np.errstate(invalid="ignore"):
        g = np.where(q < lo, lo - q, np.where(q > hi, q - hi, 0.0))
    return np.sqrt(np.sum(g * g, axis=2))


def csr_sets(indices, offsets):
    return [set(indices[offsets[i]:offsets[i + 1]].tolist()) for i in range(len(offsets) - 1)]
