# Triton: a vector add compiled by Triton's JIT, launched through the
# launcher Triton builds (cuLaunchKernelEx), six times.  Exact results.
import torch
import triton
import triton.language as tl


@triton.jit
def ks_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


n = 1 << 20
x = torch.arange(n, device="cuda", dtype=torch.float32) % 5
y = torch.ones(n, device="cuda", dtype=torch.float32)
out = torch.empty_like(x)
for _ in range(6):
    ks_add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    x, out = out, x
torch.cuda.synchronize()
print("triton: checksum %.1f" % x.double().sum().item())
