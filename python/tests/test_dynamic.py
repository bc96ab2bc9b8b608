"""The dynamic structures (HashGrids and every method class) against a numpy model."""
import numpy as np
import pytest

import hhg
from scenes import boxes, overlap_matrix

CLASSES = list(hhg.method_classes.values())


def make(cls, dim, dtype, **kw):
    return cls(dim=dim, dtype=dtype, **kw)


def model_pairs(model):
    """Sorted (M, 2) id pairs, smaller id first, from {id: box}."""
    if len(model) < 2:
        return np.zeros((0, 2), np.int64)
    ids = np.array(sorted(model), dtype=np.int64)
    bx = np.array([model[i] for i in ids])
    i, j = np.nonzero(np.triu(overlap_matrix(bx, bx), 1))
    p = np.stack([ids[i], ids[j]], axis=1)
    p.sort(axis=1)
    return p[np.lexsort((p[:, 1], p[:, 0]))]


def check(s, model):
    assert len(s) == len(model)
    np.testing.assert_array_equal(s.pairs(), model_pairs(model))
    if model:
        ids = np.array(list(model), dtype=np.int64)
        np.testing.assert_array_equal(s.boxes(ids), np.array([model[i] for i in ids]))
        assert all(int(i) in s for i in ids[:20]) and all(i in s for i in ids[:20])
    s.validate()


def test_registry_classes():
    names = [m for m, _ in hhg._hhg._method_classes()]
    assert names == hhg.methods() and names[0] == "hhg"
    assert set(hhg.method_classes) == set(names)
    assert hhg.method_classes["hhg"] is hhg.HashGrids
    assert hhg.SweepAndPrune().method == "sap" and hhg.BruteForce().method == "brute"
    for m, cls in hhg.method_classes.items():
        s = cls()
        assert isinstance(s, hhg.Structure) and s.method == m and s.dim == 3 and s.dtype == np.float64


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dynamic_sequence_matches_model(cls, dim, dtype):
    rng = np.random.default_rng(dim * 7 + len(dtype))
    kw = {"activation_threshold": 8} if cls is hhg.HashGrids else {}
    s = make(cls, dim, dtype, **kw)
    model = {}
    for step in range(12):
        kind = ["random", "touching", "zero_size", "decades", "far", "unbounded"][step % 6]
        new = boxes(kind, int(rng.integers(1, 40)), dim, np.dtype(dtype), seed=step)
        if kind == "far":
            new = new - new.min()  # keep the scene mixable with the others
        ids = s.insert(new)
        assert ids.dtype == np.int64 and len(set(ids.tolist())) == len(ids)
        model.update(zip(ids.tolist(), new))
        live = np.array(list(model), dtype=np.int64)
        mv = rng.choice(live, size=len(live) // 2, replace=False)
        to = boxes("random", len(mv), dim, np.dtype(dtype), seed=100 + step)
        s.move(mv, to)
        model.update(zip(mv.tolist(), to))
        rm = rng.choice(live, size=len(live) // 4, replace=False)
        s.remove(rm)
        for i in rm.tolist():
            del model[i]
            assert i not in s
        check(s, model)
    s.clear()
    assert len(s) == 0 and len(s.pairs()) == 0


def test_batch_move_with_repeated_id_last_wins():
    for cls in CLASSES:
        s = cls(dim=2)
        ids = s.insert([[0, 0, 1, 1], [5, 5, 6, 6]])
        s.move([ids[0], ids[0]], [[5, 5, 6, 6], [9, 9, 10, 10]])
        np.testing.assert_array_equal(s.boxes(ids[:1]), [[9, 9, 10, 10]])
        assert len(s.pairs()) == 0


def test_stale_ids_after_reuse():
    for cls in CLASSES:
        s = cls(dim=3)
        a = s.insert(np.zeros((1, 6)))
        s.remove(a)
        b = s.insert(np.zeros((1, 6)))
        assert a[0] != b[0] and a[0] not in s and b[0] in s
        with pytest.raises(hhg.Error, match="not stored"):
            s.remove(a)
        assert len(s) == 1


def test_hash_grids_config_keywords():
    g = hhg.HashGrids(dim=3, hierarchy_factor=3.0, initial_cells=(4, 8, 16), minimal_grid_density=2,
                      growth="by_occupancy", activation_threshold=0, cell_capacity=4,
                      occupied_cells_capacity=16, strategy="rebuild")
    c = g.config
    assert c["hierarchy_factor"] == 3.0 and c["initial_cells"] == (4, 8, 16) and c["growth"] == "by_occupancy"
    assert c["strategy"] == "rebuild" and c["activation_threshold"] == 0 and c["cell_capacity"] == 4
    assert hhg.HashGrids(activation_threshold=None).config["activation_threshold"] is None
    assert c["adaptive_factor"] is True
    assert hhg.HashGrids(adaptive_factor=False).config["adaptive_factor"] is False
    assert hhg.HashGrids(initial_cells=32).config["initial_cells"] == (32, 32, 32)
    bx = boxes("decades", 400, 3, np.float64, seed=3)
    ids = g.insert(bx)
    st = g.stats()
    assert st["objects"] == 400 and st["grids_active"] and len(st["grids"]) >= 1
    p = g.pairs()
    from scenes import brute_pairs
    want = np.sort(ids[brute_pairs(bx)], axis=1)  # index pairs -> id pairs, smaller id first
    np.testing.assert_array_equal(p, want[np.lexsort((want[:, 1], want[:, 0]))])
    assert g.stats()["pairs"] == len(p)


@pytest.mark.parametrize("kw, exc", [
    ({"hierarchy_factor": 1.0}, hhg.Error), ({"hierarchy_factor": float("nan")}, hhg.Error),
    ({"initial_cells": 3}, hhg.Error), ({"initial_cells": (16, 16, 2)}, hhg.Error),
    ({"initial_cells": -1}, hhg.Error), ({"minimal_grid_density": 0}, hhg.Error),
    ({"cell_capacity": 0}, hhg.Error), ({"growth": "sideways"}, hhg.Error),
    ({"strategy": "lazy"}, hhg.Error), ({"activation_threshold": -1}, hhg.Error),
    ({"no_such_field": 1}, TypeError), ({"minimal_grid_density": 2.5}, TypeError),
    ({"adaptive_factor": 1}, TypeError),
    ({"dim": 4}, ValueError), ({"dtype": "int32"}, TypeError), ({"workers": 0}, ValueError),
    # past a C long long: the documented errors, not pybind11's RuntimeError
    ({"cell_capacity": 2**70}, hhg.Error), ({"initial_cells": 2**70}, hhg.Error),
    ({"activation_threshold": 2**64}, hhg.Error), ({"minimal_grid_density": -2**70}, hhg.Error),
    ({"workers": 2**70}, ValueError), ({"initial_cells": True}, TypeError),
])
def test_bad_construction(kw, exc):
    with pytest.raises(exc):
        hhg.HashGrids(**kw)


def test_other_methods_take_no_config():
    with pytest.raises(TypeError):
        hhg.SweepAndPrune(hierarchy_factor=2.0)
    with pytest.raises(hhg.Error, match="unknown method"):
        hhg.Structure("nope")


def snapshot(s, ids):
    return len(s), s.pairs().tolist(), s.boxes(ids).tolist(), [int(i) in s for i in ids]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_errors_change_nothing(cls):
    s = cls(dim=3)
    bx = boxes("random", 50, 3, np.float64, seed=1)
    ids = s.insert(bx)
    gone = s.insert(bx[:2])
    s.remove(gone)
    before = snapshot(s, ids)
    nan_mid = bx.copy()
    nan_mid[25, 4] = np.nan
    inv_mid = bx.copy()
    inv_mid[30, 0] = inv_mid[30, 3] + 1
    cases = [
        (hhg.Error, "NaN", lambda: s.insert(nan_mid)),
        (hhg.Error, "min > max", lambda: s.insert(inv_mid)),
        (ValueError, "shape", lambda: s.insert(np.zeros((2, 4)))),
        (ValueError, "shape", lambda: s.insert(np.zeros(6))),
        (TypeError, "dtype", lambda: s.insert(np.array([["x"] * 6]))),
        (hhg.Error, "NaN", lambda: s.move(ids, nan_mid)),
        (hhg.Error, "min > max", lambda: s.move(ids, inv_mid)),
        (hhg.Error, "not stored", lambda: s.move(np.r_[ids[:3], gone[:1]], bx[:4])),
        (hhg.Error, "not stored", lambda: s.move([12345], bx[:1])),
        (ValueError, "differ in length", lambda: s.move(ids, bx[:3])),
        (TypeError, "integers", lambda: s.move(ids.astype(float), bx)),
        (hhg.Error, "not stored", lambda: s.remove(np.r_[ids[:5], gone[1:]])),
        (hhg.Error, "more than once", lambda: s.remove(np.r_[ids[:5], ids[2:3]])),
        (hhg.Error, "not stored", lambda: s.remove([-1])),
        (ValueError, "1-D", lambda: s.remove(ids.reshape(5, 10))),
        (hhg.Error, "not stored", lambda: s.boxes(gone)),
    ]
    for exc, text, call in cases:
        with pytest.raises(exc, match=text):
            call()
        assert snapshot(s, ids) == before, text
    s.validate()
    assert gone[0] not in s and "x" not in s and 2**70 not in s and True not in s


def test_unbounded_objects_and_stats_counters():
    g = hhg.HashGrids(dim=2)
    ids = g.insert([[-np.inf, 0, np.inf, 1], [3, 0.5, 4, 0.5], [3, 5, 4, 6]])
    np.testing.assert_array_equal(g.pairs(), [[ids[0], ids[1]]])
    assert g.stats()["unbounded_objects"] == 1
    s = hhg.SweepAndPrune(dim=2)
    s.insert(np.zeros((3, 4)))
    s.pairs()
    st = s.stats()
    assert st["objects"] == 3 and st["method"] == "sap" and st["bytes"] > 0


def test_ids_encoding():
    g = hhg.HashGrids()
    ids = g.insert(np.zeros((3, 6)))
    assert np.all(ids >> 32 >= 1)  # generation in the high half, never 0
    np.testing.assert_array_equal(ids & 0xFFFFFFFF, [0, 1, 2])  # slot index in the low half


def test_stub_names_every_class_and_function():
    import ast
    import pathlib
    stub = pathlib.Path(hhg.__file__).with_name("__init__.pyi")
    tree = ast.parse(stub.read_text())
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    assert set(hhg.__all__) <= names
    for _, cls in hhg._hhg._method_classes():
        assert cls in names


def test_needles_get_short_cells_exactly():
    # 10x1x1 boxes along x inserted at once: cells 8 times shorter on y and z
    # (stats' cell_edges), the same pairs as brute force.
    rng = np.random.default_rng(5)
    lo = rng.uniform(0, 25, size=(2000, 3))
    bx = np.concatenate([lo, lo + np.array([10.0, 1.0, 1.0]) * rng.uniform(0.8, 1.2, size=(2000, 3))], axis=1)
    g = hhg.HashGrids(dim=3)
    ids = g.insert(bx)
    grid = g.stats()["grids"][0]
    assert grid["cell_edges"] == (grid["cell_size"], grid["cell_size"] / 8, grid["cell_size"] / 8)
    from scenes import brute_pairs
    want = np.sort(ids[brute_pairs(bx)], axis=1)
    np.testing.assert_array_equal(g.pairs(), want[np.lexsort((want[:, 1], want[:, 0]))])


def test_numpy_integers_and_empty_lists():
    g = hhg.HashGrids(initial_cells=np.int64(32), cell_capacity=np.uint16(2), workers=np.int32(1))
    assert g.config["initial_cells"] == (32, 32, 32) and g.config["cell_capacity"] == 2
    ids = g.insert(np.zeros((2, 6)))
    # an empty list is a float64 array to numpy: as ids it is no ids
    assert g.boxes([]).shape == (0, 6)
    g.move([], np.zeros((0, 6)))
    g.remove([])
    assert len(g) == 2 and g.pairs().tolist() == [[ids[0], ids[1]]]
    with pytest.raises(TypeError, match="integers"):
        g.remove([1.0])  # a float that is not empty is still refused


def test_nearest_with_a_huge_k_raises_and_changes_nothing():
    g = hhg.HashGrids()
    ids = g.insert(np.array([[0, 0, 0, 1, 1, 1.0]]))
    for q in (1, 4):  # Q k wrapped around to 0 for Q = 4 (a crash until stop 79)
        with pytest.raises((ValueError, MemoryError)):
            g.nearest(np.zeros((q, 3)), k=2**62)
    got, dist = g.nearest(np.zeros((4, 3)), k=2)
    assert got[:, 0].tolist() == [ids[0]] * 4 and dist[:, 0].tolist() == [0.0] * 4
    assert len(g) == 1
