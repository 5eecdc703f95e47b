"""Result types of ops that return several tensors, as torch.return_types: tuples with named
fields (max, min, topk, sort, aminmax)."""
from collections import namedtuple

__all__ = ["max", "min", "topk", "sort", "aminmax"]


def _result_type(name, fields, doc):
    base = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={getattr(self, f)!r}" for f in fields)
        return f"mpamp.return_types.{name}(\n{body})"

    return type(name, (base,), {"__slots__": (), "__doc__": doc, "__repr__": __repr__,
                                "__module__": __name__})


max = _result_type("max", ["values", "indices"],  # noqa: A001 - torch's name
                   "(values, indices) from mpamp.max(input, dim): a tuple with named fields.")
min = _result_type("min", ["values", "indices"],  # noqa: A001
                   "(values, indices) from mpamp.min(input, dim): a tuple with named fields.")
topk = _result_type("topk", ["values", "indices"],
                    "(values, indices) from mpamp.topk: a tuple with named fields.")
sort = _result_type("sort", ["values", "indices"],
                    "(values, indices) from mpamp.sort: a tuple with named fields.")
aminmax = _result_type("aminmax", ["min", "max"],
                       "(min, max) from mpamp.aminmax: a tuple with named fields.")
