"""hhg.pairs against the numpy brute force, for every method of the registry."""
import numpy as np
import pytest

import hhg
from scenes import KINDS, boxes, brute_pairs

DTYPES = [np.float32, np.float64]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("dtype", DTYPES)
def test_hhg_pairs_match_brute_force(kind, dim, dtype):
    for n, seed in [(0, 0), (1, 1), (37, 2), (600, 3)]:
        bx = boxes(kind, n, dim, dtype, seed)
        got = hhg.pairs(bx)
        assert got.dtype == np.int64 and got.shape[1] == 2
        np.testing.assert_array_equal(got, brute_pairs(bx))


@pytest.mark.parametrize("method", hhg.methods())
@pytest.mark.parametrize("kind", KINDS)
def test_every_method_matches_brute_force(method, kind):
    for dim in (2, 3):
        for dtype in DTYPES:
            bx = boxes(kind, 300, dim, dtype, seed=dim)
            np.testing.assert_array_equal(hhg.pairs(bx, method=method, workers=1), brute_pairs(bx))


def test_pairs_sorted_unique_and_ordered():
    bx = boxes("random", 2000, 3, np.float64, seed=9)
    p = hhg.pairs(bx)
    assert len(p) > 1000
    assert np.all(p[:, 0] < p[:, 1])
    keys = p[:, 0] * len(bx) + p[:, 1]
    assert np.all(np.diff(keys) > 0)  # strictly increasing: sorted and no duplicates


def test_workers_do_not_change_the_result():
    bx = boxes("random", 20000, 3, np.float64, seed=4) * 3.0
    ref = hhg.pairs(bx, workers=1)
    assert len(ref) > 0
    for w in (2, 3, None, -1):
        np.testing.assert_array_equal(hhg.pairs(bx, workers=w), ref)
    for m in ("pivot", "pivot-chunked"):
        np.testing.assert_array_equal(hhg.pairs(bx, method=m, workers=2), ref)


def test_array_likes_and_conversions():
    bx = boxes("random", 200, 2, np.float64, seed=5)
    ref = brute_pairs(bx)
    np.testing.assert_array_equal(hhg.pairs(bx.tolist()), ref)  # lists
    np.testing.assert_array_equal(hhg.pairs(np.asfortranarray(bx)), ref)  # not C-contiguous
    np.testing.assert_array_equal(hhg.pairs(np.hstack([bx, bx])[:, :4]), ref)  # a strided view
    ints = np.array([[0, 0, 1, 1], [1, 1, 2, 2], [3, 3, 4, 4]])
    np.testing.assert_array_equal(hhg.pairs(ints), [[0, 1]])  # integers become float64


def test_zero_copy_for_c_contiguous_arrays_of_the_right_dtype():
    for dt in ("float32", "float64"):
        a = boxes("random", 10, 3, np.dtype(dt))
        assert np.shares_memory(hhg._hhg._as_array(a, dt), a)
        other = a.astype(np.float64 if dt == "float32" else np.float32)
        assert not np.shares_memory(hhg._hhg._as_array(other, dt), other)
    f = np.asfortranarray(boxes("random", 10, 3, np.float64))
    assert not np.shares_memory(hhg._hhg._as_array(f, "float64"), f)


@pytest.mark.parametrize("bad, exc, text", [
    (np.zeros((3, 5)), ValueError, "shape"),
    (np.zeros(6), ValueError, "shape"),
    (np.zeros((2, 3, 6)), ValueError, "shape"),
    (np.array([["a"] * 6]), TypeError, "dtype"),
    (np.zeros((2, 6), dtype=complex), TypeError, "dtype"),
    ([[0, 0, 0, 1, 1, float("nan")]], hhg.Error, "NaN"),
    ([[0, 0, 0, 1, 1, 1], [2, 0, 0, 1, 1, 1]], hhg.Error, "min > max"),
])
def test_pairs_bad_input(bad, exc, text):
    for m in hhg.methods():
        with pytest.raises(exc, match=text):
            hhg.pairs(bad, method=m)


def test_pairs_bad_method_and_workers():
    bx = boxes("random", 5, 3, np.float64)
    with pytest.raises(hhg.Error, match="unknown method 'nope'"):
        hhg.pairs(bx, method="nope")
    for w in (0, -2, 10**6):
        with pytest.raises(ValueError, match="workers"):
            hhg.pairs(bx, workers=w)
    with pytest.raises(TypeError):
        hhg.pairs(bx, workers=1.5)
    with pytest.raises(TypeError):
        hhg.pairs(bx, workers=True)
    for w in (2**63, 2**70, -2**70):  # past a C long long: the documented ValueError, not pybind11's RuntimeError
        with pytest.raises(ValueError, match="workers"):
            hhg.pairs(bx, workers=w)
    # numpy integers are ints
    np.testing.assert_array_equal(hhg.pairs(bx, workers=np.int64(2)), hhg.pairs(bx, workers=1))
    assert issubclass(hhg.Error, ValueError)


def test_input_is_not_modified():
    bx = boxes("decades", 500, 3, np.float64, seed=6)
    keep = bx.copy()
    hhg.pairs(bx)
    np.testing.assert_array_equal(bx, keep)


def test_threads_work_in_a_forked_child():
    """multiprocessing forks on Linux: a child must not wait on the parent's pool threads."""
    import os
    import signal
    bx = boxes("random", 5000, 3, np.float64, seed=12)
    ref = hhg.pairs(bx, workers=2)  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # the child: exit code 0 when the result is right
        signal.alarm(20)
        ok = np.array_equal(hhg.pairs(bx, workers=2), ref) and np.array_equal(hhg.query_pairs(bx[:, :3], 0.5, workers=2),
                                                                              hhg.query_pairs(bx[:, :3], 0.5, workers=1))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
