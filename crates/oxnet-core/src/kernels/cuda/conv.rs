//! Hand-written CUDA kernels of convolution and the dense layers (launchers in
//! `op::cuda_blas`): im2col into the batched column layout `[C*K][n*Y]` (every
//! image of a chunk side by side, so one GEMM per group covers the chunk),
//! col2im as a gather (deterministic, no atomics), the `[N][F][Y] <-> [F][N][Y]`
//! swaps around the GEMMs (with the bias fused into the forward one), bias
//! gradients as per-channel sums, and a row-bias add for FullyConnected.
//! Kernels are templates over the storage type, instantiated as `extern "C"`
//! functions named `conv_<kernel>_<tag>` for f32, f64, f16 and bf16.

/// The source's name (what launchers pass to `Device::function`).
pub const NAME: &str = "conv";

const BODY: &str = r#"
struct OxConv { long long n0, nc, c, f, groups, x[3], y[3], k[3], s[3], d[3], p[3], xl, yl, kl; };

/* col[(c*K + ki) * (nc*Y) + n*Y + yi] = x[n0+n][c][y*s - p + k*d] (0 outside). */
template <typename S> __device__ void im2col(const S* x, S* col, OxConv g) {
  typedef typename Ox<S>::C C;
  long long cols = g.nc * g.yl;
  unsigned long long total = (unsigned long long)(g.c * g.kl) * cols;
  OX_LOOP(i, total) {
    long long j = (long long)(i % cols), r = (long long)(i / cols);
    long long n = j / g.yl, yi = j % g.yl;
    long long c = r / g.kl, ki = r % g.kl;
    long long k2 = ki % g.k[2], k1 = (ki / g.k[2]) % g.k[1], k0 = ki / (g.k[2] * g.k[1]);
    long long y2 = yi % g.y[2], y1 = (yi / g.y[2]) % g.y[1], y0 = yi / (g.y[2] * g.y[1]);
    long long i0 = y0 * g.s[0] - g.p[0] + k0 * g.d[0];
    long long i1 = y1 * g.s[1] - g.p[1] + k1 * g.d[1];
    long long i2 = y2 * g.s[2] - g.p[2] + k2 * g.d[2];
    S v = Ox<S>::st((C)0);
    if (i0 >= 0 && i0 < g.x[0] && i1 >= 0 && i1 < g.x[1] && i2 >= 0 && i2 < g.x[2])
      v = x[((g.n0 + n) * g.c + c) * g.xl + (i0 * g.x[1] + i1) * g.x[2] + i2];
    col[i] = v;
  }
}

/* dx[n0+n][c][xpos] = sum of the column entries im2col read it into. */
template <typename S> __device__ void col2im(const S* col, S* dx, OxConv g) {
  typedef typename Ox<S>::C C;
  long long cols = g.nc * g.yl;
  unsigned long long total = (unsigned long long)(g.nc * g.c) * g.xl;
  OX_LOOP(i, total) {
    long long xp = (long long)(i % g.xl), nc_ = (long long)(i / g.xl);
    long long c = nc_ % g.c, n = nc_ / g.c;
    long long x2 = xp % g.x[2], x1 = (xp / g.x[2]) % g.x[1], x0 = xp / (g.x[2] * g.x[1]);
    C acc = (C)0;
    for (long long k0 = 0; k0 < g.k[0]; k0++) {
      long long t0 = x0 + g.p[0] - k0 * g.d[0];
      if (t0 < 0 || t0 % g.s[0] != 0) continue;
      long long y0 = t0 / g.s[0];
      if (y0 >= g.y[0]) continue;
      for (long long k1 = 0; k1 < g.k[1]; k1++) {
        long long t1 = x1 + g.p[1] - k1 * g.d[1];
        if (t1 < 0 || t1 % g.s[1] != 0) continue;
        long long y1 = t1 / g.s[1];
        if (y1 >= g.y[1]) continue;
        for (long long k2 = 0; k2 < g.k[2]; k2++) {
          long long t2 = x2 + g.p[2] - k2 * g.d[2];
          if (t2 < 0 || t2 % g.s[2] != 0) continue;
          long long y2 = t2 / g.s[2];
          if (y2 >= g.y[2]) continue;
          long long ki = (k0 * g.k[1] + k1) * g.k[2] + k2;
          long long yi = (y0 * g.y[1] + y1) * g.y[2] + y2;
          acc += Ox<S>::ld(col[(c * g.kl + ki) * cols + n * g.yl + yi]);
        }
      }
    }
    dx[((g.n0 + n) * g.c + c) * g.xl + xp] = Ox<S>::st(acc);
  }
}

/* y[n0+n][f][yi] = t[f][n][yi] (+ bias[f]). */
template <typename S> __device__ void out_fwd(const S* t, const S* bias, int has_bias, S* y, long long f_, long long nc, long long yl, long long n0) {
  typedef typename Ox<S>::C C;
  unsigned long long total = (unsigned long long)(f_ * nc) * yl;
  OX_LOOP(i, total) {
    long long yi = (long long)(i % yl), n = (long long)((i / yl) % nc), f = (long long)(i / (yl * nc));
    C v = Ox<S>::ld(t[i]);
    if (has_bias) v += Ox<S>::ld(bias[f]);
    y[((n0 + n) * f_ + f) * yl + yi] = Ox<S>::st(v);
  }
}

/* t[f][n][yi] = dy[n0+n][f][yi]. */
template <typename S> __device__ void dy_gather(const S* dy, S* t, long long f_, long long nc, long long yl, long long n0) {
  unsigned long long total = (unsigned long long)(f_ * nc) * yl;
  OX_LOOP(i, total) {
    long long yi = (long long)(i % yl), n = (long long)((i / yl) % nc), f = (long long)(i / (yl * nc));
    t[i] = dy[((n0 + n) * f_ + f) * yl + yi];
  }
}

/* out[c] = sum over n, l of y[n][c][l]: one block per channel (grid-stride over
   channels), double accumulation, a shared-memory tree. */
template <typename S> __device__ void channel_sum(const S* y, S* out, long long nb, long long ch, long long len) {
  __shared__ double part[256];
  for (long long c = blockIdx.x; c < ch; c += gridDim.x) {
    double acc = 0;
    long long total = nb * len;
    for (long long j = threadIdx.x; j < total; j += blockDim.x) {
      long long n = j / len, l = j % len;
      acc += (double)Ox<S>::ld(y[(n * ch + c) * len + l]);
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
      if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[c] = Ox<S>::st((typename Ox<S>::C)part[0]);
    __syncthreads();
  }
}

/* y[r][j] += bias[j] for a rows x cols matrix. */
template <typename S> __device__ void bias_rows(S* y, const S* bias, long long rows, long long cols) {
  typedef typename Ox<S>::C C;
  unsigned long long total = (unsigned long long)rows * cols;
  OX_LOOP(i, total) {
    C v = Ox<S>::ld(y[i]) + Ox<S>::ld(bias[(long long)(i % cols)]);
    y[i] = Ox<S>::st(v);
  }
}

/* y[n][c][l] += bias[c] for an (nb, ch, len) array. */
template <typename S> __device__ void bias_chan(S* y, const S* bias, long long ch, long long len, unsigned long long total) {
  typedef typename Ox<S>::C C;
  OX_LOOP(i, total) {
    C v = Ox<S>::ld(y[i]) + Ox<S>::ld(bias[(long long)((i / len) % ch)]);
    y[i] = Ox<S>::st(v);
  }
}

#define OX_CONV(TAG, S) \
extern "C" __global__ void conv_im2col_##TAG(const S* x, S* col, OxConv g) { im2col<S>(x, col, g); } \
extern "C" __global__ void conv_col2im_##TAG(const S* col, S* dx, OxConv g) { col2im<S>(col, dx, g); } \
extern "C" __global__ void conv_out_fwd_##TAG(const S* t, const S* bias, int has_bias, S* y, long long f, long long nc, long long yl, long long n0) \
  { out_fwd<S>(t, bias, has_bias, y, f, nc, yl, n0); } \
extern "C" __global__ void conv_dy_gather_##TAG(const S* dy, S* t, long long f, long long nc, long long yl, long long n0) \
  { dy_gather<S>(dy, t, f, nc, yl, n0); } \
extern "C" __global__ void conv_channel_sum_##TAG(const S* y, S* out, long long nb, long long ch, long long len) \
  { channel_sum<S>(y, out, nb, ch, len); } \
extern "C" __global__ void conv_bias_rows_##TAG(S* y, const S* bias, long long rows, long long cols) \
  { bias_rows<S>(y, bias, rows, cols); } \
extern "C" __global__ void conv_bias_chan_##TAG(S* y, const S* bias, long long ch, long long len, unsigned long long total) \
  { bias_chan<S>(y, bias, ch, len, total); }

OX_CONV(f32, float)
OX_CONV(f64, double)
OX_CONV(f16, ox_f16)
OX_CONV(bf16, ox_bf16)
"#;

/// The source: the common prelude, then the kernels.
pub fn source() -> String {
    super::with_prelude(NAME, BODY)
}
