"""hhg: broad-phase collision detection with hierarchical hash grids.

numpy arrays in, numpy arrays out::

    import numpy as np, hhg
    boxes = np.array([[0, 0, 0, 1, 1, 1], [1, 1, 1, 2, 2, 2], [5, 5, 5, 6, 6, 6]], float)
    hhg.pairs(boxes)                 # array([[0, 1]]): closed overlap, touching counts
    g = hhg.HashGrids(dim=3)
    ids = g.insert(boxes)            # int64 ids
    g.move(ids[2:], boxes[:1])       # the third box now sits on the first
    g.pairs()                        # (M, 2) ids
    hhg.query_pairs(points, r)       # like cKDTree(points).query_pairs(r, output_type="ndarray")

Functions: pairs, neighbors, query_pairs, methods. Classes: HashGrids (with
batched queries) and one class per method of the C++ registry (SweepAndPrune,
BruteForce, ...), all subclasses of Structure. Errors in the input raise
hhg.Error (a ValueError) with the C++ message, or TypeError/ValueError for a
wrong dtype or shape; nothing changes then. See docs/python.md.
"""
from . import _hhg
from ._hhg import Error, HashGrids, Structure, methods, neighbors, pairs, query_pairs

__version__ = "0.1.0"

__all__ = ["Error", "HashGrids", "Structure", "methods", "neighbors", "pairs", "query_pairs"]


def _method_class(method, class_name):
    def __init__(self, dim=3, dtype="float64", workers=None):
        Structure.__init__(self, method, dim, dtype, workers)

    __init__.__doc__ = f"{class_name}(dim=3, dtype='float64', workers=None): method '{method}'."
    return type(class_name, (Structure,), {
        "__init__": __init__,
        "__module__": __name__,
        "__doc__": f"The dynamic broad phase '{method}' (hhg.pairs(..., method='{method}')), "
                   "with the interface of hhg.Structure.",
    })


#: method name -> class, for every method of the registry hhg::all_methods
method_classes = {}
for _method, _class_name in _hhg._method_classes():
    if _method == "hhg":
        method_classes[_method] = HashGrids
        continue
    globals()[_class_name] = method_classes[_method] = _method_class(_method, _class_name)
    __all__.append(_class_name)
del _method, _class_name
