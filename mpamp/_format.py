"""Text form of tensors, close to torch's: 4 decimals, scientific notation for wide ranges,
integer-valued floats as "1.", long tensors summarised with "..."."""
import numpy as np

_DEFAULT_DTYPES = ("float32", "int64", "bool")


def _float_formatter(values):
    finite = values[np.isfinite(values)]
    nonzero = np.abs(finite[finite != 0])
    if finite.size and np.all(finite == np.round(finite)) and (nonzero.size == 0 or
                                                                nonzero.max() < 1e8):
        width = max(len(f"{v:.0f}.") for v in finite)

        def fmt(v):
            return (f"{v:.0f}." if np.isfinite(v) else str(v).replace("inf", "inf")).rjust(width)
        return fmt
    sci = nonzero.size and (nonzero.max() / nonzero.min() > 1000.0 or nonzero.max() > 1e8)
    spec = "{:.4e}" if sci else "{:.4f}"
    strs = [spec.format(v) for v in finite] or ["0"]
    width = max(len(s) for s in strs)

    def fmt(v):
        return (spec.format(v) if np.isfinite(v) else str(v)).rjust(width)
    return fmt


def format_tensor(t, device=None, requires_grad=None):
    """repr(t) in torch's style; device (e.g. "cuda:0") and requires_grad describe the tensor
    t is a host copy of (torch's order: device, dtype, requires_grad)."""
    dtype = t.dtype
    name = repr(dtype).split(".")[-1]
    suffix = [f"device='{device}'"] if device is not None else []
    if t.numel() == 0:
        body = "[]"
        if t.shape != (0,):
            suffix.append(f"size={tuple(t.shape)}")
    else:
        arr = np.asarray(t.detach().float().numpy() if dtype.is_floating_point
                         else t.detach().numpy())
        opts = {"separator": ", ", "prefix": "tensor(", "threshold": 1000, "edgeitems": 3,
                "max_line_width": 80}
        if dtype.is_floating_point:
            opts["formatter"] = {"float_kind": _float_formatter(arr.astype(np.float64).ravel())}
        body = np.array2string(arr, **opts)
    if name not in _DEFAULT_DTYPES or (t.numel() == 0 and name != "float32"):
        suffix.append(f"dtype=mpamp.{name}")
    if t.requires_grad if requires_grad is None else requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + suffix) + ")"
