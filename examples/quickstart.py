"""A first look at mpamp: tensors in float32, float16 and bfloat16, exact casts, views and
zero-copy NumPy interop. Run: python examples/quickstart.py"""
import numpy as np

import mpamp

mpamp.manual_seed(0)
x = mpamp.randn(4, 6)
print("x =", x)
print("CPU kernel level:", mpamp.backends.cpu.get_isa(),
      "| CUDA available:", mpamp.cuda.is_available())

for dtype in ("fp16", "bf16"):
    low = x.to(dtype)
    err = (low.float().numpy() - x.numpy())
    print(f"{low.dtype}: max |rounding error| = {np.abs(err).max():.2e}, "
          f"{low.element_size()} bytes/element")

# Views share memory: no copies for transpose, slicing, reshape.
w = x.t()[:, 1:3]
print("view of x:", w.shape, "contiguous:", w.is_contiguous())
w[0, 0] = 100.0
print("x[1, 0] after writing through the view:", x[1, 0].item())

# NumPy interop without copies.
a = np.arange(6, dtype=np.float32).reshape(2, 3)
t = mpamp.from_numpy(a)
a[0, 0] = -1
print("from_numpy shares memory:", t[0, 0].item() == -1.0)
print("bf16 halves memory:", t.bfloat16().nbytes, "bytes vs", t.nbytes)
