# CuPy: an elementwise kernel of its own (compiled by NVRTC, launched with
# cuLaunchKernel), a reduction and a matrix product (cuBLAS).  Prints a
# checksum of exact integer-valued results.
import cupy as cp

x = cp.arange(1 << 20, dtype=cp.float32) % 7
axpb = cp.ElementwiseKernel("float32 x, float32 a, float32 b", "float32 y",
                            "y = a * x + b", "ks_axpb")
y = axpb(x, cp.float32(2), cp.float32(1))
for _ in range(3):
    y = axpb(y, cp.float32(1), cp.float32(-1))
s = float(y.sum())
m = cp.ones((256, 256), dtype=cp.float32) @ cp.full((256, 256), 2, dtype=cp.float32)
cp.cuda.Device().synchronize()
print("cupy: checksum %.1f %.1f" % (s, float(m.sum())))
