//! Hand-written CUDA kernels: nn (see the launchers in `op::cuda_*`). Kernels are
//! templates over the storage type instantiated as `extern "C"` functions named
//! `nn_<kernel>_<tag>` (tag as in `gen::ctype`).

/// The source's name (what launchers pass to `Device::function`).
pub const NAME: &str = "nn";

const BODY: &str = r#"
/* ---- common helpers ---------------------------------------------------------- */
__device__ __forceinline__ float ox_exp(float v) { return expf(v); }
__device__ __forceinline__ double ox_exp(double v) { return exp(v); }
__device__ __forceinline__ float ox_expm1(float v) { return expm1f(v); }
__device__ __forceinline__ double ox_expm1(double v) { return expm1(v); }
__device__ __forceinline__ float ox_log1p(float v) { return log1pf(v); }
__device__ __forceinline__ double ox_log1p(double v) { return log1p(v); }
__device__ __forceinline__ float ox_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double ox_tanh(double v) { return tanh(v); }
__device__ __forceinline__ float ox_fabs(float v) { return fabsf(v); }
__device__ __forceinline__ double ox_fabs(double v) { return fabs(v); }
__device__ __forceinline__ float ox_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double ox_sqrt(double v) { return sqrt(v); }

/* Sum over the warp; every lane gets the result. */
__device__ __forceinline__ double ox_warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename C> __device__ __forceinline__ C ox_warp_max(C v) {
  for (int o = 16; o > 0; o >>= 1) { C t = __shfl_xor_sync(0xffffffffu, v, o); v = t > v ? t : v; }
  return v;
}
/* Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets
   the result. Every thread of the block must call it. */
__device__ double ox_block_sum(double v) {
  __shared__ double sh[33];
  v = ox_warp_sum(v);
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  if (w == 0) {
    double t = lane < nw ? sh[lane] : 0.0;
    t = ox_warp_sum(t);
    if (lane == 0) sh[32] = t;
  }
  __syncthreads();
  return sh[32];
}
/* Element i of an array of any dtype (code as the launchers' `dcode`), as double. */
__device__ __forceinline__ double ox_ld_any(const void* p, long long i, int code) {
  switch (code) {
    case 0: return (double)((const float*)p)[i];
    case 1: return ((const double*)p)[i];
    case 2: return (double)Ox<ox_f16>::ld(((const ox_f16*)p)[i]);
    case 8: return (double)Ox<ox_bf16>::ld(((const ox_bf16*)p)[i]);
    case 3: return (double)((const int*)p)[i];
    case 4: return (double)((const long long*)p)[i];
    case 5: return (double)((const unsigned char*)p)[i];
    case 6: return (double)((const signed char*)p)[i];
    default: return (double)((const unsigned char*)p)[i];
  }
}
/* Rust's `f as i64` (saturating, NaN -> 0). */
__device__ __forceinline__ long long ox_f2ll(double v) {
  return v != v ? 0LL : (v <= -9.2233720368547758e18 ? (-9223372036854775807LL - 1) : (v >= 9.2233720368547758e18 ? 9223372036854775807LL : (long long)v));
}
/* The CPU's counter-based generator (random.rs): SplitMix64 of key and index. */
__device__ __forceinline__ unsigned long long ox_splitmix64(unsigned long long z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
__device__ __forceinline__ double ox_uniform01(unsigned long long key, unsigned long long i) {
  return (double)(ox_splitmix64(key ^ ox_splitmix64(i)) >> 11) * (1.0 / 9007199254740992.0);
}
/* atomic add into a 16-bit float (ox_f16 or ox_bf16): compare-and-swap on the aligned
   32-bit word holding it. */
template <typename H> __device__ __forceinline__ void ox_atomic_add_16(H* a, float v) {
  unsigned int* base = (unsigned int*)((unsigned long long)a & ~3ULL);
  const unsigned int shift = ((unsigned long long)a & 2ULL) ? 16u : 0u;
  unsigned int old = *base, assumed;
  do {
    assumed = old;
    H h; h.x = (unsigned short)((assumed >> shift) & 0xffffu);
    H r = Ox<H>::st(Ox<H>::ld(h) + v);
    const unsigned int nw = (assumed & ~(0xffffu << shift)) | ((unsigned int)r.x << shift);
    old = atomicCAS(base, assumed, nw);
  } while (assumed != old);
}
__device__ __forceinline__ void ox_atomic_add(ox_f16* a, float v) { ox_atomic_add_16(a, v); }
__device__ __forceinline__ void ox_atomic_add(ox_bf16* a, float v) { ox_atomic_add_16(a, v); }
__device__ __forceinline__ void ox_atomic_add(float* a, float v) { atomicAdd(a, v); }
__device__ __forceinline__ void ox_atomic_add(double* a, double v) { atomicAdd(a, v); }

/* ---- Activation / LeakyReLU (elementwise act_types) ----------------------------
   a: 0 relu, 1 sigmoid, 2 tanh, 3 softrelu, 4 softsign, 5 leaky, 6 elu, 7 selu, 8 gelu */
#define OX_SELU_ALPHA 1.6732632423543773
#define OX_SELU_LAMBDA 1.0507009873554805
template <typename C> __device__ __forceinline__ C ox_act(C x, int a, C s) {
  switch (a) {
    case 0: return x > (C)0 ? x : (C)0;
    case 1: return (C)1 / ((C)1 + ox_exp(-x));
    case 2: return ox_tanh(x);
    case 3: return x > (C)20 ? x : ox_log1p(ox_exp(x));
    case 4: return x / ((C)1 + ox_fabs(x));
    case 5: return x > (C)0 ? x : s * x;
    case 6: return x > (C)0 ? x : s * ox_expm1(x);
    case 7: { const C l = (C)OX_SELU_LAMBDA; return x > (C)0 ? l * x : l * ((C)OX_SELU_ALPHA * ox_expm1(x)); }
    default: { const double xf = (double)x; return (C)(0.5 * xf * (1.0 + erf(xf * 0.7071067811865476))); }
  }
}
template <typename C> __device__ __forceinline__ C ox_act_d(C x, C y, int a, C s) {
  switch (a) {
    case 0: return y > (C)0 ? (C)1 : (C)0;
    case 1: return y * ((C)1 - y);
    case 2: return (C)1 - y * y;
    case 3: return (C)1 / ((C)1 + ox_exp(-x));
    case 4: { const C d = (C)1 + ox_fabs(x); return (C)1 / (d * d); }
    case 5: return x > (C)0 ? (C)1 : s;
    case 6: return x > (C)0 ? (C)1 : y + s;
    case 7: return x > (C)0 ? (C)OX_SELU_LAMBDA : y + (C)(OX_SELU_LAMBDA * OX_SELU_ALPHA);
    default: {
      const double xf = (double)x;
      const double cdf = 0.5 * (1.0 + erf(xf * 0.7071067811865476));
      const double pdf = exp(-0.5 * xf * xf) / sqrt(6.283185307179586);
      return (C)(cdf + xf * pdf);
    }
  }
}
template <typename S> __device__ void act_fwd(const S* x, S* y, unsigned long long n, int a, double s) {
  typedef typename Ox<S>::C C;
  OX_LOOP(i, n) y[i] = Ox<S>::st(ox_act<C>(Ox<S>::ld(x[i]), a, (C)s));
}
template <typename S> __device__ void act_bwd(const S* g, const S* x, const S* y, S* dx, unsigned long long n, int a, double s) {
  typedef typename Ox<S>::C C;
  OX_LOOP(i, n) dx[i] = Ox<S>::st(Ox<S>::ld(g[i]) * ox_act_d<C>(Ox<S>::ld(x[i]), Ox<S>::ld(y[i]), a, (C)s));
}
/* PReLU over (outer, c, inner); `one`: a single slope. */
template <typename S> __device__ void prelu_fwd(const S* x, const S* gamma, S* y, unsigned long long n, long long c, long long inner, int one) {
  typedef typename Ox<S>::C C;
  OX_LOOP(i, n) {
    const C v = Ox<S>::ld(x[i]);
    const C gm = Ox<S>::ld(gamma[one ? 0LL : ((long long)i / inner) % c]);
    y[i] = Ox<S>::st(v > (C)0 ? v : gm * v);
  }
}
/* One block per channel of (outer, c, inner): dx, and dgamma[ch] = sum g * x over x <= 0. */
template <typename S> __device__ void prelu_bwd(const S* g, const S* x, const S* gamma, S* dx, S* dgamma, long long outer, long long c, long long inner) {
  typedef typename Ox<S>::C C;
  const long long m = outer * inner;
  for (long long ch = blockIdx.x; ch < c; ch += gridDim.x) {
    const C gm = Ox<S>::ld(gamma[ch]);
    double acc = 0.0;
    for (long long t = threadIdx.x; t < m; t += blockDim.x) {
      const long long o = t / inner, i = (o * c + ch) * inner + (t - o * inner);
      const C v = Ox<S>::ld(x[i]), gi = Ox<S>::ld(g[i]);
      C d;
      if (v > (C)0) { d = gi; } else { acc += (double)(gi * v); d = gi * gm; }
      dx[i] = Ox<S>::st(d);
    }
    acc = ox_block_sum(acc);
    if (threadIdx.x == 0) dgamma[ch] = Ox<S>::st((C)acc);
  }
}
/* RReLU: training draws one slope per element in [lo, hi), else the mean slope. */
template <typename S> __device__ void rrelu_fwd(const S* x, S* y, S* mask, unsigned long long n, unsigned long long key, double lo, double hi, int train) {
  typedef typename Ox<S>::C C;
  const double mid = (lo + hi) / 2.0;
  OX_LOOP(i, n) {
    const C a = (C)(train ? lo + (hi - lo) * ox_uniform01(key, i) : mid);
    const C v = Ox<S>::ld(x[i]);
    mask[i] = Ox<S>::st(a);
    y[i] = Ox<S>::st(v > (C)0 ? v : a * v);
  }
}
template <typename S> __device__ void rrelu_bwd(const S* g, const S* x, const S* mask, S* dx, unsigned long long n) {
  typedef typename Ox<S>::C C;
  OX_LOOP(i, n) {
    const C gi = Ox<S>::ld(g[i]);
    dx[i] = Ox<S>::st(Ox<S>::ld(x[i]) > (C)0 ? gi : gi * Ox<S>::ld(mask[i]));
  }
}

/* ---- Dropout ---------------------------------------------------------------------
   The draw of element i is indexed by its position with the `axes` zeroed:
   sh.shape = the data's shape, sh.stride = its strides with 0 on the shared axes. */
template <typename S> __device__ void dropout_fwd(const S* x, S* y, S* mask, unsigned long long n, unsigned long long key, double p, OxStrided sh) {
  typedef typename Ox<S>::C C;
  /* p = 1: every element dropped, mask 0 * (1/0) = NaN, as MXNet computes it. */
  const double scale = 1.0 / (1.0 - p);
  const C keep = (C)scale, dropped = (C)(0.0 * scale);
  OX_LOOP(i, n) {
    unsigned long long ki = i;
    if (sh.ndim > 0) {
      unsigned long long rem = i; ki = 0;
      for (int d = sh.ndim - 1; d >= 0; --d) {
        const unsigned long long q = rem % (unsigned long long)sh.shape[d];
        rem /= (unsigned long long)sh.shape[d];
        ki += q * (unsigned long long)sh.stride[d];
      }
    }
    const C m = ox_uniform01(key, ki) >= p ? keep : dropped;
    mask[i] = Ox<S>::st(m);
    y[i] = Ox<S>::st(Ox<S>::ld(x[i]) * m);
  }
}
/* Inactive dropout: y = x, mask = 1. */
template <typename S> __device__ void dropout_id(const S* x, S* y, S* mask, unsigned long long n) {
  typedef typename Ox<S>::C C;
  OX_LOOP(i, n) { y[i] = x[i]; mask[i] = Ox<S>::st((C)1); }
}
template <typename S> __device__ void mul_ew(const S* a, const S* b, S* y, unsigned long long n) {
  OX_LOOP(i, n) y[i] = Ox<S>::st(Ox<S>::ld(a[i]) * Ox<S>::ld(b[i]));
}

/* ---- BatchNorm: one block per channel of (outer, c, inner); S the data type, P the
   type of gamma/beta/moving stats/mean/invstd ------------------------------------ */
template <typename S, typename P> __device__ void bn_fwd(const S* x, P* gamma, const P* beta, const P* mm, const P* mv, S* y, P* mean_o, P* invstd_o,
    long long outer, long long c, long long inner, double eps, int fix_gamma, int training, int ones) {
  typedef typename Ox<S>::C C;
  typedef typename Ox<P>::C PC;
  const long long m = outer * inner;
  const double nf = (double)(m > 0 ? m : 1);
  for (long long ch = blockIdx.x; ch < c; ch += gridDim.x) {
    double mean, var;
    if (training) {
      double s = 0.0;
      for (long long t = threadIdx.x; t < m; t += blockDim.x) {
        const long long o = t / inner;
        s += (double)Ox<S>::ld(x[(o * c + ch) * inner + (t - o * inner)]);
      }
      mean = ox_block_sum(s) / nf;
      double q = 0.0;
      for (long long t = threadIdx.x; t < m; t += blockDim.x) {
        const long long o = t / inner;
        const double d = (double)Ox<S>::ld(x[(o * c + ch) * inner + (t - o * inner)]) - mean;
        q += d * d;
      }
      var = ox_block_sum(q) / nf;
    } else {
      mean = (double)Ox<P>::ld(mm[ch]);
      var = (double)Ox<P>::ld(mv[ch]);
    }
    const double gm = fix_gamma ? 1.0 : (double)Ox<P>::ld(gamma[ch]);
    const double inv = 1.0 / sqrt(var + eps);
    const C mc = (C)mean, a = (C)(gm * inv), b = (C)(double)Ox<P>::ld(beta[ch]);
    for (long long t = threadIdx.x; t < m; t += blockDim.x) {
      const long long o = t / inner, i = (o * c + ch) * inner + (t - o * inner);
      y[i] = Ox<S>::st((Ox<S>::ld(x[i]) - mc) * a + b);
    }
    if (threadIdx.x == 0) {
      mean_o[ch] = Ox<P>::st((PC)mean);
      invstd_o[ch] = Ox<P>::st((PC)inv);
      if (ones) gamma[ch] = Ox<P>::st((PC)1);
    }
  }
}
template <typename S, typename P> __device__ void bn_bwd(const S* g, const S* x, const P* gamma, const P* mean, const P* invstd, P* mm, P* mv,
    S* dx, P* dgamma, P* dbeta, long long outer, long long c, long long inner, double eps, double momentum, int fix_gamma, int batch) {
  typedef typename Ox<S>::C C;
  typedef typename Ox<P>::C PC;
  const long long m = outer * inner;
  const double nf = (double)(m > 0 ? m : 1);
  for (long long ch = blockIdx.x; ch < c; ch += gridDim.x) {
    const double mu = (double)Ox<P>::ld(mean[ch]), is = (double)Ox<P>::ld(invstd[ch]);
    double s0 = 0.0, s1 = 0.0;
    for (long long t = threadIdx.x; t < m; t += blockDim.x) {
      const long long o = t / inner, i = (o * c + ch) * inner + (t - o * inner);
      const double gi = (double)Ox<S>::ld(g[i]);
      s0 += gi;
      s1 += gi * ((double)Ox<S>::ld(x[i]) - mu) * is;
    }
    s0 = ox_block_sum(s0);
    s1 = ox_block_sum(s1);
    const double gm = fix_gamma ? 1.0 : (double)Ox<P>::ld(gamma[ch]);
    const double k1 = gm * is;
    if (batch) {
      const double mg = s0 / nf, mgx = s1 / nf;
      for (long long t = threadIdx.x; t < m; t += blockDim.x) {
        const long long o = t / inner, i = (o * c + ch) * inner + (t - o * inner);
        const double xh = ((double)Ox<S>::ld(x[i]) - mu) * is;
        dx[i] = Ox<S>::st((C)(k1 * ((double)Ox<S>::ld(g[i]) - mg - xh * mgx)));
      }
    } else {
      const C k = (C)k1;
      for (long long t = threadIdx.x; t < m; t += blockDim.x) {
        const long long o = t / inner, i = (o * c + ch) * inner + (t - o * inner);
        dx[i] = Ox<S>::st(Ox<S>::ld(g[i]) * k);
      }
    }
    if (threadIdx.x == 0) {
      dgamma[ch] = Ox<P>::st((PC)(fix_gamma ? 0.0 : s1));
      dbeta[ch] = Ox<P>::st((PC)s0);
      if (batch) {
        const double var = fmax(1.0 / (is * is) - eps, 0.0);
        mm[ch] = Ox<P>::st((PC)((double)Ox<P>::ld(mm[ch]) * momentum + mu * (1.0 - momentum)));
        mv[ch] = Ox<P>::st((PC)((double)Ox<P>::ld(mv[ch]) * momentum + var * (1.0 - momentum)));
      }
    }
  }
}

/* ---- LayerNorm: one warp per (o, j) group of (outer, n, inner), along n ---------- */
#define OX_WARP_GROUPS(gid, groups) \
  const int lane = threadIdx.x & 31; const long long wpb = blockDim.x >> 5; \
  for (long long gid = (long long)blockIdx.x * wpb + (threadIdx.x >> 5); gid < (groups); gid += (long long)gridDim.x * wpb)
template <typename S> __device__ void ln_fwd(const S* x, const S* gamma, const S* beta, S* y, S* mean_o, S* std_o,
    long long outer, long long n, long long inner, double eps) {
  typedef typename Ox<S>::C C;
  OX_WARP_GROUPS(gid, outer * inner) {
    const long long o = gid / inner, base = o * n * inner + (gid - o * inner);
    double s = 0.0;
    for (long long k = lane; k < n; k += 32) s += (double)Ox<S>::ld(x[base + k * inner]);
    const double mean = ox_warp_sum(s) / (double)n;
    double q = 0.0;
    for (long long k = lane; k < n; k += 32) { const double d = (double)Ox<S>::ld(x[base + k * inner]) - mean; q += d * d; }
    q = ox_warp_sum(q);
    const C inv = (C)(1.0 / sqrt(q / (double)n + eps));
    const C mr = (C)mean;
    for (long long k = lane; k < n; k += 32) {
      const long long i = base + k * inner;
      y[i] = Ox<S>::st((Ox<S>::ld(x[i]) - mr) * inv * Ox<S>::ld(gamma[k]) + Ox<S>::ld(beta[k]));
    }
    if (lane == 0) { mean_o[gid] = Ox<S>::st(mr); std_o[gid] = Ox<S>::st((C)sqrt(q / (double)n + eps)); }
  }
}
template <typename S> __device__ void ln_bwd_dx(const S* g, const S* x, const S* gamma, const S* mean, const S* std_, S* dx,
    long long outer, long long n, long long inner) {
  typedef typename Ox<S>::C C;
  const double nf = (double)n;
  OX_WARP_GROUPS(gid, outer * inner) {
    const long long o = gid / inner, base = o * n * inner + (gid - o * inner);
    const double mu = (double)Ox<S>::ld(mean[gid]), inv = 1.0 / (double)Ox<S>::ld(std_[gid]);
    double a = 0.0, b = 0.0;
    for (long long k = lane; k < n; k += 32) {
      const long long i = base + k * inner;
      const double gk = (double)Ox<S>::ld(gamma[k]), gi = (double)Ox<S>::ld(g[i]);
      const double xh = ((double)Ox<S>::ld(x[i]) - mu) * inv;
      a += gi * gk;
      b += gi * gk * xh;
    }
    a = ox_warp_sum(a);
    b = ox_warp_sum(b);
    for (long long k = lane; k < n; k += 32) {
      const long long i = base + k * inner;
      const double gk = (double)Ox<S>::ld(gamma[k]), gi = (double)Ox<S>::ld(g[i]);
      const double xh = ((double)Ox<S>::ld(x[i]) - mu) * inv;
      dx[i] = Ox<S>::st((C)((gi * gk - a / nf - xh * b / nf) * inv));
    }
  }
}
/* One block per k: dgamma[k] = sum g * xhat, dbeta[k] = sum g over every group. */
template <typename S> __device__ void ln_bwd_dgb(const S* g, const S* x, const S* mean, const S* std_, S* dgamma, S* dbeta,
    long long outer, long long n, long long inner) {
  typedef typename Ox<S>::C C;
  const long long groups = outer * inner;
  for (long long k = blockIdx.x; k < n; k += gridDim.x) {
    double sg = 0.0, sgx = 0.0;
    for (long long t = threadIdx.x; t < groups; t += blockDim.x) {
      const long long o = t / inner, i = (o * n + k) * inner + (t - o * inner);
      const double gi = (double)Ox<S>::ld(g[i]);
      const double xh = ((double)Ox<S>::ld(x[i]) - (double)Ox<S>::ld(mean[t])) * (1.0 / (double)Ox<S>::ld(std_[t]));
      sg += gi;
      sgx += gi * xh;
    }
    sg = ox_block_sum(sg);
    sgx = ox_block_sum(sgx);
    if (threadIdx.x == 0) { dgamma[k] = Ox<S>::st((C)sgx); dbeta[k] = Ox<S>::st((C)sg); }
  }
}

/* ---- softmax along n of (outer, n, inner), one warp per group -------------------- */
template <typename S> __device__ void softmax_fwd(const S* x, S* y, long long outer, long long n, long long inner) {
  typedef typename Ox<S>::C C;
  OX_WARP_GROUPS(gid, outer * inner) {
    const long long o = gid / inner, base = o * n * inner + (gid - o * inner);
    C m = (C)(-__int_as_float(0x7f800000));
    for (long long k = lane; k < n; k += 32) { const C v = Ox<S>::ld(x[base + k * inner]); if (v > m) m = v; }
    m = ox_warp_max<C>(m);
    double s = 0.0;
    for (long long k = lane; k < n; k += 32) s += (double)ox_exp(Ox<S>::ld(x[base + k * inner]) - m);
    const C sc = (C)ox_warp_sum(s);
    for (long long k = lane; k < n; k += 32) {
      const long long i = base + k * inner;
      y[i] = Ox<S>::st(ox_exp(Ox<S>::ld(x[i]) - m) / sc);
    }
  }
}
/* dx = y * (g - sum_k g * y). */
template <typename S> __device__ void softmax_bwd(const S* g, const S* y, S* dx, long long outer, long long n, long long inner) {
  typedef typename Ox<S>::C C;
  OX_WARP_GROUPS(gid, outer * inner) {
    const long long o = gid / inner, base = o * n * inner + (gid - o * inner);
    double s = 0.0;
    for (long long k = lane; k < n; k += 32) { const long long i = base + k * inner; s += (double)Ox<S>::ld(g[i]) * (double)Ox<S>::ld(y[i]); }
    s = ox_warp_sum(s);
    for (long long k = lane; k < n; k += 32) {
      const long long i = base + k * inner;
      dx[i] = Ox<S>::st((C)((double)Ox<S>::ld(y[i]) * ((double)Ox<S>::ld(g[i]) - s)));
    }
  }
}
/* SoftmaxOutput's valid-label count (one block): labels[0..groups) != ignore. */
extern "C" __global__ void nn_smo_count(const void* label, int lcode, long long groups, double ignore, double* out) {
  double s = 0.0;
  for (long long i = threadIdx.x; i < groups; i += blockDim.x) s += ox_ld_any(label, i, lcode) != ignore ? 1.0 : 0.0;
  s = ox_block_sum(s);
  if (threadIdx.x == 0) out[0] = s;
}
/* SoftmaxOutput's gradient; `cnt` (valid normalisation) may be null. */
template <typename S> __device__ void smo_bwd(const S* head, const void* label, int lcode, const S* y, S* dx, unsigned long long total,
    long long n, long long inner, int soft, int use_ignore, double ignore, double alpha, double scale, const double* cnt, int use_head) {
  typedef typename Ox<S>::C C;
  const double sc = cnt ? scale / fmax(cnt[0], 1.0) : scale;
  const double off = n > 1 ? alpha / (double)(n - 1) : 0.0;
  const long long blk = n * inner;
  OX_LOOP(i, total) {
    const long long ii = (long long)i, o = ii / blk, rem = ii - o * blk, kk = rem / inner, j = rem - kk * inner;
    const double yv = (double)Ox<S>::ld(y[i]);
    double out;
    if (soft) {
      out = (yv - ox_ld_any(label, ii, lcode)) * sc;
    } else {
      const double lv = ox_ld_any(label, o * inner + j, lcode);
      if (use_ignore && lv == ignore) {
        out = 0.0;
      } else {
        const double t = ox_f2ll(lv) == kk ? 1.0 - alpha : off;
        out = (yv - t) * sc;
      }
    }
    if (use_head) out *= (double)Ox<S>::ld(head[i]);
    dx[i] = Ox<S>::st((C)out);
  }
}

/* ---- Pooling (as kernels/cpu/conv.rs pool_forward / pool_backward) -----------------
   Axes padded to 3 (d, h, w); kind 0 max, 1 avg, 2 sum, 3 lp. */
struct OxPool {
  long long x[3], y[3], k[3], s[3], plo[3], phi[3];
  long long batch, ch, cl, kind, p, include_pad;
  double lowest;
};
/* One axis of window o: clipped [lo, hi) and the padded extent. */
__device__ __forceinline__ void ox_win(const OxPool& g, int a, long long o, long long& lo, long long& hi, long long& padded) {
  const long long start = o * g.s[a] - g.plo[a];
  long long endp = start + g.k[a];
  const long long lim = g.x[a] + g.phi[a];
  if (endp > lim) endp = lim;
  lo = start > 0 ? start : 0;
  long long h = endp > 0 ? endp : 0;
  if (h > g.x[a]) h = g.x[a];
  hi = h > lo ? h : lo;
  padded = endp - start > 0 ? endp - start : 0;
}
/* (base, element stride) of plane (n, c) of an image with len positions. */
__device__ __forceinline__ void ox_plane(const OxPool& g, long long plane, long long len, long long& base, long long& st) {
  if (g.cl) { const long long nn = plane / g.ch, cc = plane - nn * g.ch; base = nn * len * g.ch + cc; st = g.ch; }
  else { base = plane * len; st = 1; }
}
__device__ __forceinline__ double ox_pow_p(double v, long long p) {
  return p == 1 ? v : (p == 2 ? v * v : (p == 3 ? v * v * v : pow(v, (double)p)));
}
__device__ __forceinline__ double ox_root_p(double v, long long p) {
  return p == 1 ? v : (p == 2 ? sqrt(v) : (p == 3 ? cbrt(v) : pow(v, 1.0 / (double)p)));
}
/* The first maximal element of window (od, oh, ow) as an offset from the plane's base
   (-1 for an empty window). */
template <typename S> __device__ __forceinline__ long long ox_pool_argmax(const S* xp, long long xs, const OxPool& g, long long od, long long oh, long long ow) {
  typedef typename Ox<S>::C C;
  long long l0, h0, l1, h1, l2, h2, pd;
  ox_win(g, 0, od, l0, h0, pd); ox_win(g, 1, oh, l1, h1, pd); ox_win(g, 2, ow, l2, h2, pd);
  long long best = -1;
  C m = (C)0;
  for (long long id = l0; id < h0; ++id)
    for (long long ih = l1; ih < h1; ++ih)
      for (long long iw = l2; iw < h2; ++iw) {
        const long long at = ((id * g.x[1] + ih) * g.x[2] + iw) * xs;
        const C v = Ox<S>::ld(xp[at]);
        if (best < 0 || v > m) { m = v; best = at; }
      }
  return best;
}
template <typename S> __device__ void pool_fwd(const S* x, S* y, OxPool g) {
  typedef typename Ox<S>::C C;
  const long long xlen = g.x[0] * g.x[1] * g.x[2], ylen = g.y[0] * g.y[1] * g.y[2];
  const unsigned long long total = (unsigned long long)(g.batch * g.ch * ylen);
  OX_LOOP(t, total) {
    const long long plane = (long long)t / ylen, oi = (long long)t - plane * ylen;
    const long long od = oi / (g.y[1] * g.y[2]), oh = (oi / g.y[2]) % g.y[1], ow = oi % g.y[2];
    long long xb, xs, yb, ys;
    ox_plane(g, plane, xlen, xb, xs);
    ox_plane(g, plane, ylen, yb, ys);
    const S* xp = x + xb;
    S* out = y + yb + oi * ys;
    if (g.kind == 0) {
      const long long at = ox_pool_argmax<S>(xp, xs, g, od, oh, ow);
      *out = at >= 0 ? xp[at] : Ox<S>::st((C)g.lowest);
      continue;
    }
    long long l0, h0, p0, l1, h1, p1, l2, h2, p2;
    ox_win(g, 0, od, l0, h0, p0); ox_win(g, 1, oh, l1, h1, p1); ox_win(g, 2, ow, l2, h2, p2);
    double acc = 0.0;
    long long count = 0;
    for (long long id = l0; id < h0; ++id)
      for (long long ih = l1; ih < h1; ++ih)
        for (long long iw = l2; iw < h2; ++iw) {
          const double v = (double)Ox<S>::ld(xp[((id * g.x[1] + ih) * g.x[2] + iw) * xs]);
          acc += g.kind == 3 ? ox_pow_p(v, g.p) : v;
          ++count;
        }
    double r;
    if (g.kind == 1) {
      const long long nn = g.include_pad ? p0 * p1 * p2 : count;
      r = nn == 0 ? 0.0 : acc / (double)nn;
    } else if (g.kind == 3) {
      r = ox_root_p(acc, g.p);
    } else {
      r = acc;
    }
    *out = Ox<S>::st((C)r);
  }
}
/* The gradient one output (window) gives each element `at` of its window. */
template <typename S> __device__ __forceinline__ double ox_pool_gv(const S* xp, double gy, double yv, long long at, double scale, const OxPool& g) {
  if (g.kind == 3) return yv == 0.0 ? 0.0 : gy * scale * ox_pow_p((double)Ox<S>::ld(xp[at]) / yv, g.p - 1);
  return gy * scale;
}
__device__ __forceinline__ double ox_pool_scale(const OxPool& g, long long n0, long long n1, long long n2, long long padded) {
  if (g.kind != 1) return 1.0;
  const long long nn = g.include_pad ? padded : n0 * n1 * n2;
  return nn == 0 ? 0.0 : 1.0 / (double)nn;
}
/* Backward where no two windows share an element: one thread per output writes its
   window's gradient (dx zeroed first by pool_zero). */
template <typename S> __device__ void pool_bwd_scatter(const S* x, const S* y, const S* dy, S* dx, OxPool g) {
  typedef typename Ox<S>::C C;
  const long long xlen = g.x[0] * g.x[1] * g.x[2], ylen = g.y[0] * g.y[1] * g.y[2];
  const unsigned long long total = (unsigned long long)(g.batch * g.ch * ylen);
  OX_LOOP(t, total) {
    const long long plane = (long long)t / ylen, oi = (long long)t - plane * ylen;
    const long long od = oi / (g.y[1] * g.y[2]), oh = (oi / g.y[2]) % g.y[1], ow = oi % g.y[2];
    long long xb, xs, yb, ys;
    ox_plane(g, plane, xlen, xb, xs);
    ox_plane(g, plane, ylen, yb, ys);
    const S* xp = x + xb;
    S* dxp = dx + xb;
    const long long yi = yb + oi * ys;
    if (g.kind == 0) {
      const long long at = ox_pool_argmax<S>(xp, xs, g, od, oh, ow);
      if (at >= 0) dxp[at] = dy[yi];
      continue;
    }
    long long l0, h0, p0, l1, h1, p1, l2, h2, p2;
    ox_win(g, 0, od, l0, h0, p0); ox_win(g, 1, oh, l1, h1, p1); ox_win(g, 2, ow, l2, h2, p2);
    const double scale = ox_pool_scale(g, h0 - l0, h1 - l1, h2 - l2, p0 * p1 * p2);
    const double gy = (double)Ox<S>::ld(dy[yi]), yv = (double)Ox<S>::ld(y[yi]);
    for (long long id = l0; id < h0; ++id)
      for (long long ih = l1; ih < h1; ++ih)
        for (long long iw = l2; iw < h2; ++iw) {
          const long long at = ((id * g.x[1] + ih) * g.x[2] + iw) * xs;
          dxp[at] = Ox<S>::st((C)ox_pool_gv<S>(xp, gy, yv, at, scale, g));
        }
  }
}
/* First and last output along axis a whose window holds input position i. */
__device__ __forceinline__ void ox_out_range(const OxPool& g, int a, long long i, long long& lo, long long& hi) {
  const long long q = i + g.plo[a];
  lo = q < g.k[a] ? 0 : (q - g.k[a]) / g.s[a] + 1;
  hi = q / g.s[a];
  if (hi > g.y[a] - 1) hi = g.y[a] - 1;
}
/* Backward with overlapping windows: one thread per input element sums what every
   window holding it gives it (max: the windows whose first maximum it is). */
template <typename S> __device__ void pool_bwd_gather(const S* x, const S* y, const S* dy, S* dx, OxPool g) {
  typedef typename Ox<S>::C C;
  const long long xlen = g.x[0] * g.x[1] * g.x[2], ylen = g.y[0] * g.y[1] * g.y[2];
  const unsigned long long total = (unsigned long long)(g.batch * g.ch * xlen);
  OX_LOOP(t, total) {
    const long long plane = (long long)t / xlen, xi = (long long)t - plane * xlen;
    const long long id = xi / (g.x[1] * g.x[2]), ih = (xi / g.x[2]) % g.x[1], iw = xi % g.x[2];
    long long xb, xs, yb, ys;
    ox_plane(g, plane, xlen, xb, xs);
    ox_plane(g, plane, ylen, yb, ys);
    const S* xp = x + xb;
    const long long me = xi * xs;
    long long a0, b0, a1, b1, a2, b2;
    ox_out_range(g, 0, id, a0, b0); ox_out_range(g, 1, ih, a1, b1); ox_out_range(g, 2, iw, a2, b2);
    double acc = 0.0;
    for (long long od = a0; od <= b0; ++od)
      for (long long oh = a1; oh <= b1; ++oh)
        for (long long ow = a2; ow <= b2; ++ow) {
          const long long yi = yb + ((od * g.y[1] + oh) * g.y[2] + ow) * ys;
          const double gy = (double)Ox<S>::ld(dy[yi]);
          if (g.kind == 0) {
            if (ox_pool_argmax<S>(xp, xs, g, od, oh, ow) == me) acc += gy;
            continue;
          }
          long long l0, h0, p0, l1, h1, p1, l2, h2, p2;
          ox_win(g, 0, od, l0, h0, p0); ox_win(g, 1, oh, l1, h1, p1); ox_win(g, 2, ow, l2, h2, p2);
          const double scale = ox_pool_scale(g, h0 - l0, h1 - l1, h2 - l2, p0 * p1 * p2);
          acc += ox_pool_gv<S>(xp, gy, (double)Ox<S>::ld(y[yi]), me, scale, g);
        }
    dx[xb + me] = Ox<S>::st((C)acc);
  }
}
template <typename S> __device__ void fill_zero(S* y, unsigned long long n) {
  typedef typename Ox<S>::C C;
  OX_LOOP(i, n) y[i] = Ox<S>::st((C)0);
}

/* ---- InstanceNorm: one warp per (batch, channel) row of length len ---------------- */
template <typename S> __device__ void in_fwd(const S* x, const S* gamma, const S* beta, S* y, S* mean_o, S* inv_o, long long rows, long long c, long long len, double eps) {
  typedef typename Ox<S>::C C;
  OX_WARP_GROUPS(r, rows) {
    const long long base = r * len;
    double s = 0.0;
    for (long long k = lane; k < len; k += 32) s += (double)Ox<S>::ld(x[base + k]);
    const double mu = ox_warp_sum(s) / (double)len;
    double q = 0.0;
    for (long long k = lane; k < len; k += 32) { const double d = (double)Ox<S>::ld(x[base + k]) - mu; q += d * d; }
    const double inv = 1.0 / sqrt(ox_warp_sum(q) / (double)len + eps);
    const long long ch = r % c;
    const C a = (C)(inv * (double)Ox<S>::ld(gamma[ch])), b = Ox<S>::ld(beta[ch]), mr = (C)mu;
    for (long long k = lane; k < len; k += 32) y[base + k] = Ox<S>::st((Ox<S>::ld(x[base + k]) - mr) * a + b);
    if (lane == 0) { mean_o[r] = Ox<S>::st(mr); inv_o[r] = Ox<S>::st((C)inv); }
  }
}
/* dx per row; each row's (sum g*xhat, sum g) into part[2 * r]. */
template <typename S> __device__ void in_bwd_dx(const S* g, const S* x, const S* gamma, const S* mean, const S* invstd, S* dx, double* part,
    long long rows, long long c, long long len) {
  typedef typename Ox<S>::C C;
  OX_WARP_GROUPS(r, rows) {
    const long long base = r * len;
    const double mu = (double)Ox<S>::ld(mean[r]), inv = (double)Ox<S>::ld(invstd[r]);
    const double gm = (double)Ox<S>::ld(gamma[r % c]);
    double sg = 0.0, sgx = 0.0;
    for (long long k = lane; k < len; k += 32) {
      const double gi = (double)Ox<S>::ld(g[base + k]);
      sg += gi;
      sgx += gi * ((double)Ox<S>::ld(x[base + k]) - mu) * inv;
    }
    sg = ox_warp_sum(sg);
    sgx = ox_warp_sum(sgx);
    const double mg = sg / (double)len, mgx = sgx / (double)len;
    for (long long k = lane; k < len; k += 32) {
      const double xh = ((double)Ox<S>::ld(x[base + k]) - mu) * inv;
      dx[base + k] = Ox<S>::st((C)(gm * inv * ((double)Ox<S>::ld(g[base + k]) - mg - xh * mgx)));
    }
    if (lane == 0) { part[2 * r] = sgx; part[2 * r + 1] = sg; }
  }
}
/* One block per channel: dgamma[ch], dbeta[ch] from the rows' partial sums. */
template <typename S> __device__ void in_bwd_dgb(const double* part, S* dgamma, S* dbeta, long long rows, long long c) {
  typedef typename Ox<S>::C C;
  for (long long ch = blockIdx.x; ch < c; ch += gridDim.x) {
    double a = 0.0, b = 0.0;
    for (long long r = ch + (long long)threadIdx.x * c; r < rows; r += (long long)blockDim.x * c) { a += part[2 * r]; b += part[2 * r + 1]; }
    a = ox_block_sum(a);
    b = ox_block_sum(b);
    if (threadIdx.x == 0) { dgamma[ch] = Ox<S>::st((C)a); dbeta[ch] = Ox<S>::st((C)b); }
  }
}

/* ---- Embedding ----------------------------------------------------------------------- */
__device__ __forceinline__ long long ox_clip_index(double v, long long rows) {
  if (v != v || v <= 0.0) return 0;
  const long long r = v >= 9.2233720368547758e18 ? 9223372036854775807LL : (long long)v;
  return r < rows - 1 ? r : (rows - 1 > 0 ? rows - 1 : 0);
}
template <typename S> __device__ void emb_fwd(const void* idx, int icode, const S* w, S* out, unsigned long long total, long long rows, long long dim) {
  OX_LOOP(i, total) {
    const long long r = (long long)i / dim, d = (long long)i - r * dim;
    out[i] = w[ox_clip_index(ox_ld_any(idx, r, icode), rows) * dim + d];
  }
}
/* dw zeroed first; every (index, column) adds its gradient. */
template <typename S> __device__ void emb_bwd(const void* idx, int icode, const S* g, S* dw, unsigned long long total, long long rows, long long dim) {
  OX_LOOP(i, total) {
    const long long r = (long long)i / dim, d = (long long)i - r * dim;
    ox_atomic_add(dw + ox_clip_index(ox_ld_any(idx, r, icode), rows) * dim + d, Ox<S>::ld(g[i]));
  }
}

/* ---- instantiations: nn_<kernel>_<tag> ---------------------------------------------- */
#define OX_NN_INST(T, S) \
extern "C" __global__ void nn_act_fwd_##T(const S* x, S* y, unsigned long long n, int a, double s) { act_fwd<S>(x, y, n, a, s); } \
extern "C" __global__ void nn_act_bwd_##T(const S* g, const S* x, const S* y, S* dx, unsigned long long n, int a, double s) { act_bwd<S>(g, x, y, dx, n, a, s); } \
extern "C" __global__ void nn_prelu_fwd_##T(const S* x, const S* gm, S* y, unsigned long long n, long long c, long long inner, int one) { prelu_fwd<S>(x, gm, y, n, c, inner, one); } \
extern "C" __global__ void nn_prelu_bwd_##T(const S* g, const S* x, const S* gm, S* dx, S* dgm, long long outer, long long c, long long inner) { prelu_bwd<S>(g, x, gm, dx, dgm, outer, c, inner); } \
extern "C" __global__ void nn_rrelu_fwd_##T(const S* x, S* y, S* mask, unsigned long long n, unsigned long long key, double lo, double hi, int train) { rrelu_fwd<S>(x, y, mask, n, key, lo, hi, train); } \
extern "C" __global__ void nn_rrelu_bwd_##T(const S* g, const S* x, const S* mask, S* dx, unsigned long long n) { rrelu_bwd<S>(g, x, mask, dx, n); } \
extern "C" __global__ void nn_dropout_fwd_##T(const S* x, S* y, S* mask, unsigned long long n, unsigned long long key, double p, OxStrided sh) { dropout_fwd<S>(x, y, mask, n, key, p, sh); } \
extern "C" __global__ void nn_dropout_id_##T(const S* x, S* y, S* mask, unsigned long long n) { dropout_id<S>(x, y, mask, n); } \
extern "C" __global__ void nn_mul_##T(const S* a, const S* b, S* y, unsigned long long n) { mul_ew<S>(a, b, y, n); } \
extern "C" __global__ void nn_ln_fwd_##T(const S* x, const S* gm, const S* bt, S* y, S* mo, S* so, long long outer, long long n, long long inner, double eps) { ln_fwd<S>(x, gm, bt, y, mo, so, outer, n, inner, eps); } \
extern "C" __global__ void nn_ln_bwd_dx_##T(const S* g, const S* x, const S* gm, const S* mo, const S* so, S* dx, long long outer, long long n, long long inner) { ln_bwd_dx<S>(g, x, gm, mo, so, dx, outer, n, inner); } \
extern "C" __global__ void nn_ln_bwd_dgb_##T(const S* g, const S* x, const S* mo, const S* so, S* dg, S* db, long long outer, long long n, long long inner) { ln_bwd_dgb<S>(g, x, mo, so, dg, db, outer, n, inner); } \
extern "C" __global__ void nn_softmax_fwd_##T(const S* x, S* y, long long outer, long long n, long long inner) { softmax_fwd<S>(x, y, outer, n, inner); } \
extern "C" __global__ void nn_softmax_bwd_##T(const S* g, const S* y, S* dx, long long outer, long long n, long long inner) { softmax_bwd<S>(g, y, dx, outer, n, inner); } \
extern "C" __global__ void nn_smo_bwd_##T(const S* head, const void* label, int lcode, const S* y, S* dx, unsigned long long total, long long n, long long inner, \
    int soft, int use_ignore, double ignore, double alpha, double scale, const double* cnt, int use_head) { \
  smo_bwd<S>(head, label, lcode, y, dx, total, n, inner, soft, use_ignore, ignore, alpha, scale, cnt, use_head); } \
extern "C" __global__ void nn_pool_fwd_##T(const S* x, S* y, OxPool g) { pool_fwd<S>(x, y, g); } \
extern "C" __global__ void nn_pool_bwd_scatter_##T(const S* x, const S* y, const S* dy, S* dx, OxPool g) { pool_bwd_scatter<S>(x, y, dy, dx, g); } \
extern "C" __global__ void nn_pool_bwd_gather_##T(const S* x, const S* y, const S* dy, S* dx, OxPool g) { pool_bwd_gather<S>(x, y, dy, dx, g); } \
extern "C" __global__ void nn_zero_##T(S* y, unsigned long long n) { fill_zero<S>(y, n); } \
extern "C" __global__ void nn_in_fwd_##T(const S* x, const S* gm, const S* bt, S* y, S* mo, S* io, long long rows, long long c, long long len, double eps) { in_fwd<S>(x, gm, bt, y, mo, io, rows, c, len, eps); } \
extern "C" __global__ void nn_in_bwd_dx_##T(const S* g, const S* x, const S* gm, const S* mo, const S* io, S* dx, double* part, long long rows, long long c, long long len) { in_bwd_dx<S>(g, x, gm, mo, io, dx, part, rows, c, len); } \
extern "C" __global__ void nn_in_bwd_dgb_##T(const double* part, S* dg, S* db, long long rows, long long c) { in_bwd_dgb<S>(part, dg, db, rows, c); } \
extern "C" __global__ void nn_emb_fwd_##T(const void* idx, int icode, const S* w, S* out, unsigned long long total, long long rows, long long dim) { emb_fwd<S>(idx, icode, w, out, total, rows, dim); } \
extern "C" __global__ void nn_emb_bwd_##T(const void* idx, int icode, const S* g, S* dw, unsigned long long total, long long rows, long long dim) { emb_bwd<S>(idx, icode, g, dw, total, rows, dim); }
OX_NN_INST(f32, float)
OX_NN_INST(f64, double)
OX_NN_INST(f16, ox_f16)
OX_NN_INST(bf16, ox_bf16)

#define OX_NN_BN(T, S, P) \
extern "C" __global__ void nn_bn_fwd_##T(const S* x, P* gm, const P* bt, const P* mm, const P* mv, S* y, P* mo, P* io, \
    long long outer, long long c, long long inner, double eps, int fix_gamma, int training, int ones) { \
  bn_fwd<S, P>(x, gm, bt, mm, mv, y, mo, io, outer, c, inner, eps, fix_gamma, training, ones); } \
extern "C" __global__ void nn_bn_bwd_##T(const S* g, const S* x, const P* gm, const P* mean, const P* invstd, P* mm, P* mv, \
    S* dx, P* dgm, P* dbt, long long outer, long long c, long long inner, double eps, double momentum, int fix_gamma, int batch) { \
  bn_bwd<S, P>(g, x, gm, mean, invstd, mm, mv, dx, dgm, dbt, outer, c, inner, eps, momentum, fix_gamma, batch); }
OX_NN_BN(f32, float, float)
OX_NN_BN(f64, double, double)
OX_NN_BN(f16, ox_f16, ox_f16)
OX_NN_BN(f16_f32, ox_f16, float)
OX_NN_BN(bf16, ox_bf16, ox_bf16)
OX_NN_BN(bf16_f32, ox_bf16, float)

/* ---- L2Normalization: one warp per (o, i) group of (outer, r, inner), over r ----- */
template <typename S> __device__ void l2n_fwd(const S* x, S* y, long long outer, long long r, long long inner, double eps) {
  typedef typename Ox<S>::C C;
  OX_WARP_GROUPS(gid, outer * inner) {
    const long long o = gid / inner, base = o * r * inner + (gid - o * inner);
    double s = 0.0;
    for (long long k = lane; k < r; k += 32) { const double v = (double)Ox<S>::ld(x[base + k * inner]); s += v * v; }
    const double nrm = sqrt(ox_warp_sum(s) + eps);
    for (long long k = lane; k < r; k += 32) { const long long i = base + k * inner; y[i] = Ox<S>::st((C)((double)Ox<S>::ld(x[i]) / nrm)); }
  }
}
template <typename S> __device__ void l2n_bwd(const S* g, const S* x, S* dx, long long outer, long long r, long long inner, double eps) {
  typedef typename Ox<S>::C C;
  OX_WARP_GROUPS(gid, outer * inner) {
    const long long o = gid / inner, base = o * r * inner + (gid - o * inner);
    double s = 0.0, dot = 0.0;
    for (long long k = lane; k < r; k += 32) {
      const long long i = base + k * inner;
      const double v = (double)Ox<S>::ld(x[i]);
      s += v * v;
      dot += (double)Ox<S>::ld(g[i]) * v;
    }
    const double nrm = sqrt(ox_warp_sum(s) + eps);
    dot = ox_warp_sum(dot);
    for (long long k = lane; k < r; k += 32) {
      const long long i = base + k * inner;
      dx[i] = Ox<S>::st((C)((double)Ox<S>::ld(g[i]) / nrm - (double)Ox<S>::ld(x[i]) * dot / (nrm * nrm * nrm)));
    }
  }
}

/* ---- LRN over the channels of (N, C, H*W) ------------------------------------------ */
template <typename S> __device__ __forceinline__ double ox_lrn_scale(const S* x, long long b, long long cc, long long j, long long ch, long long hw,
    long long half, double alpha, double k, double size) {
  const long long lo = cc > half ? cc - half : 0, hi = cc + half < ch - 1 ? cc + half : ch - 1;
  double acc = 0.0;
  for (long long q = lo; q <= hi; ++q) { const double v = (double)Ox<S>::ld(x[(b * ch + q) * hw + j]); acc += v * v; }
  return k + alpha / size * acc;
}
template <typename S> __device__ void lrn_fwd(const S* x, S* y, unsigned long long total, long long ch, long long hw, long long half, double alpha,
    double beta, double k, double size) {
  typedef typename Ox<S>::C C;
  OX_LOOP(e, total) {
    const long long ee = (long long)e, j = ee % hw, cc = (ee / hw) % ch, b = ee / (hw * ch);
    const double sc = ox_lrn_scale<S>(x, b, cc, j, ch, hw, half, alpha, k, size);
    y[e] = Ox<S>::st((C)((double)Ox<S>::ld(x[e]) * pow(sc, -beta)));
  }
}
template <typename S> __device__ void lrn_bwd(const S* g, const S* x, S* dx, unsigned long long total, long long ch, long long hw, long long half,
    double alpha, double beta, double k, double size) {
  typedef typename Ox<S>::C C;
  OX_LOOP(e, total) {
    const long long ee = (long long)e, j = ee % hw, cc = (ee / hw) % ch, b = ee / (hw * ch);
    const long long lo = cc > half ? cc - half : 0, hi = cc + half < ch - 1 ? cc + half : ch - 1;
    double acc = 0.0;
    for (long long q = lo; q <= hi; ++q) {
      const long long i = (b * ch + q) * hw + j;
      const double sq = ox_lrn_scale<S>(x, b, q, j, ch, hw, half, alpha, k, size);
      acc += (double)Ox<S>::ld(g[i]) * (double)Ox<S>::ld(x[i]) * pow(sq, -beta - 1.0);
    }
    const double sc = ox_lrn_scale<S>(x, b, cc, j, ch, hw, half, alpha, k, size);
    const double xe = (double)Ox<S>::ld(x[e]);
    dx[e] = Ox<S>::st((C)((double)Ox<S>::ld(g[e]) * pow(sc, -beta) - 2.0 * alpha * beta / size * xe * acc));
  }
}

/* ---- UpSampling (nearest): one input (N, ch, h, w) into channels [c0, c0 + ch) of the
   output (N, och, oh, ow); `add`: add to what the output holds (multi_input_mode=sum). */
template <typename S> __device__ void up_fwd(const S* x, S* y, unsigned long long total, long long ch, long long h, long long w, long long och,
    long long oh, long long ow, long long c0, long long s, int add) {
  typedef typename Ox<S>::C C;
  OX_LOOP(t, total) {
    const long long tt = (long long)t, xx = tt % ow, yy = (tt / ow) % oh, ci = (tt / (ow * oh)) % ch, bi = tt / (ow * oh * ch);
    const long long o = ((bi * och + c0 + ci) * oh + yy) * ow + xx;
    const double v = (double)Ox<S>::ld(x[((bi * ch + ci) * h + yy / s) * w + xx / s]);
    y[o] = Ox<S>::st((C)(add ? (double)Ox<S>::ld(y[o]) + v : v));
  }
}
/* The gradient of one input: each pixel sums its s x s block of the output gradient. */
template <typename S> __device__ void up_bwd(const S* g, S* dx, unsigned long long total, long long ch, long long h, long long w, long long och,
    long long oh, long long ow, long long c0, long long s) {
  typedef typename Ox<S>::C C;
  OX_LOOP(t, total) {
    const long long tt = (long long)t, ix = tt % w, iy = (tt / w) % h, ci = (tt / (w * h)) % ch, bi = tt / (w * h * ch);
    double acc = 0.0;
    for (long long dy = 0; dy < s; ++dy)
      for (long long dxx = 0; dxx < s; ++dxx) {
        const long long yy = iy * s + dy, xx = ix * s + dxx;
        if (yy < oh && xx < ow) acc += (double)Ox<S>::ld(g[((bi * och + c0 + ci) * oh + yy) * ow + xx]);
      }
    dx[t] = Ox<S>::st((C)acc);
  }
}

/* ---- softmax_cross_entropy: (batch, k) data, (batch,) labels ------------------------ */
__device__ __forceinline__ double ox_warp_fmax(double v) {
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
/* One warp per row: the row's -log(softmax[label]) into part[r] (or, with dx, the
   gradient (softmax - onehot) * g[0]). */
template <typename S> __device__ void sce_rows(const S* x, const void* label, int lcode, double* part, const S* g, S* dx, long long rows, long long k) {
  typedef typename Ox<S>::C C;
  OX_WARP_GROUPS(r, rows) {
    const long long base = r * k;
    double m = -__longlong_as_double(0x7ff0000000000000LL);
    for (long long j = lane; j < k; j += 32) m = fmax(m, (double)Ox<S>::ld(x[base + j]));
    m = ox_warp_fmax(m);
    double s = 0.0;
    for (long long j = lane; j < k; j += 32) s += exp((double)Ox<S>::ld(x[base + j]) - m);
    s = ox_warp_sum(s);
    long long lj = ox_f2ll(ox_ld_any(label, r, lcode));
    lj = lj < 0 ? 0 : (lj > k - 1 ? k - 1 : lj);
    if (dx) {
      const double gv = (double)Ox<S>::ld(g[0]);
      for (long long j = lane; j < k; j += 32) {
        double v = exp((double)Ox<S>::ld(x[base + j]) - m) / s;
        if (j == lj) v -= 1.0;
        dx[base + j] = Ox<S>::st((C)(v * gv));
      }
    } else if (lane == 0) {
      part[r] = -log(fmax(exp((double)Ox<S>::ld(x[base + lj]) - m) / s, 1e-300));
    }
  }
}
/* One block: out[0] = sum of part[0..rows). */
template <typename S> __device__ void sum_part(const double* part, S* out, long long rows) {
  typedef typename Ox<S>::C C;
  double s = 0.0;
  for (long long i = threadIdx.x; i < rows; i += blockDim.x) s += part[i];
  s = ox_block_sum(s);
  if (threadIdx.x == 0) out[0] = Ox<S>::st((C)s);
}

#define OX_NN_INST2(T, S) \
extern "C" __global__ void nn_l2n_fwd_##T(const S* x, S* y, long long outer, long long r, long long inner, double eps) { l2n_fwd<S>(x, y, outer, r, inner, eps); } \
extern "C" __global__ void nn_l2n_bwd_##T(const S* g, const S* x, S* dx, long long outer, long long r, long long inner, double eps) { l2n_bwd<S>(g, x, dx, outer, r, inner, eps); } \
extern "C" __global__ void nn_lrn_fwd_##T(const S* x, S* y, unsigned long long total, long long ch, long long hw, long long half, double alpha, double beta, double k, double size) { \
  lrn_fwd<S>(x, y, total, ch, hw, half, alpha, beta, k, size); } \
extern "C" __global__ void nn_lrn_bwd_##T(const S* g, const S* x, S* dx, unsigned long long total, long long ch, long long hw, long long half, double alpha, double beta, double k, double size) { \
  lrn_bwd<S>(g, x, dx, total, ch, hw, half, alpha, beta, k, size); } \
extern "C" __global__ void nn_up_fwd_##T(const S* x, S* y, unsigned long long total, long long ch, long long h, long long w, long long och, long long oh, long long ow, long long c0, long long s, int add) { \
  up_fwd<S>(x, y, total, ch, h, w, och, oh, ow, c0, s, add); } \
extern "C" __global__ void nn_up_bwd_##T(const S* g, S* dx, unsigned long long total, long long ch, long long h, long long w, long long och, long long oh, long long ow, long long c0, long long s) { \
  up_bwd<S>(g, dx, total, ch, h, w, och, oh, ow, c0, s); } \
extern "C" __global__ void nn_sce_rows_##T(const S* x, const void* label, int lcode, double* part, const S* g, S* dx, long long rows, long long k) { \
  sce_rows<S>(x, label, lcode, part, g, dx, rows, k); } \
extern "C" __global__ void nn_sum_part_##T(const double* part, S* out, long long rows) { sum_part<S>(part, out, rows); }
OX_NN_INST2(f32, float)
OX_NN_INST2(f64, double)
OX_NN_INST2(f16, ox_f16)
OX_NN_INST2(bf16, ox_bf16)

/* ---- GroupNorm: one warp per (sample, group) row of m contiguous elements; gamma and
   beta per group (row % g); everything in double as the CPU ---------------------------- */
template <typename S> __device__ __forceinline__ void ox_row_stats(const S* x, long long base, long long m, int lane, double eps, double& mu, double& sd) {
  double s = 0.0;
  for (long long k = lane; k < m; k += 32) s += (double)Ox<S>::ld(x[base + k]);
  mu = ox_warp_sum(s) / (double)m;
  double q = 0.0;
  for (long long k = lane; k < m; k += 32) { const double d = (double)Ox<S>::ld(x[base + k]) - mu; q += d * d; }
  sd = sqrt(ox_warp_sum(q) / (double)m + eps);
}
template <typename S> __device__ void gn_fwd(const S* x, const S* gamma, const S* beta, S* y, S* mean_o, S* std_o, long long rows, long long g, long long m, double eps) {
  typedef typename Ox<S>::C C;
  OX_WARP_GROUPS(r, rows) {
    const long long base = r * m;
    double mu, sd;
    ox_row_stats<S>(x, base, m, lane, eps, mu, sd);
    const double gm = (double)Ox<S>::ld(gamma[r % g]), bt = (double)Ox<S>::ld(beta[r % g]);
    for (long long k = lane; k < m; k += 32) y[base + k] = Ox<S>::st((C)(((double)Ox<S>::ld(x[base + k]) - mu) / sd * gm + bt));
    if (lane == 0) { mean_o[r] = Ox<S>::st((C)mu); std_o[r] = Ox<S>::st((C)sd); }
  }
}
/* dx per row; the row's (sum xhat * g, sum g) into part[2 * r]. */
template <typename S> __device__ void gn_bwd_dx(const S* og, const S* x, const S* gamma, S* dx, double* part, long long rows, long long g, long long m, double eps) {
  typedef typename Ox<S>::C C;
  OX_WARP_GROUPS(r, rows) {
    const long long base = r * m;
    double mu, sd;
    ox_row_stats<S>(x, base, m, lane, eps, mu, sd);
    const double gm = (double)Ox<S>::ld(gamma[r % g]);
    double dg = 0.0, db = 0.0, s1 = 0.0, s2 = 0.0;
    for (long long k = lane; k < m; k += 32) {
      const double xh = ((double)Ox<S>::ld(x[base + k]) - mu) / sd, o = (double)Ox<S>::ld(og[base + k]);
      const double t = o * gm / sd;
      dg += xh * o;
      db += o;
      s1 += t;
      s2 += t * xh;
    }
    dg = ox_warp_sum(dg);
    db = ox_warp_sum(db);
    s1 = ox_warp_sum(s1) / (double)m;
    s2 = ox_warp_sum(s2) / (double)m;
    for (long long k = lane; k < m; k += 32) {
      const double xh = ((double)Ox<S>::ld(x[base + k]) - mu) / sd, o = (double)Ox<S>::ld(og[base + k]);
      dx[base + k] = Ox<S>::st((C)(o * gm / sd - s1 - xh * s2));
    }
    if (lane == 0) { part[2 * r] = dg; part[2 * r + 1] = db; }
  }
}
#define OX_NN_INST3(T, S) \
extern "C" __global__ void nn_gn_fwd_##T(const S* x, const S* gm, const S* bt, S* y, S* mo, S* so, long long rows, long long g, long long m, double eps) { \
  gn_fwd<S>(x, gm, bt, y, mo, so, rows, g, m, eps); } \
extern "C" __global__ void nn_gn_bwd_dx_##T(const S* og, const S* x, const S* gm, S* dx, double* part, long long rows, long long g, long long m, double eps) { \
  gn_bwd_dx<S>(og, x, gm, dx, part, rows, g, m, eps); }
OX_NN_INST3(f32, float)
OX_NN_INST3(f64, double)
OX_NN_INST3(f16, ox_f16)
OX_NN_INST3(bf16, ox_bf16)
"#;

/// The source: the common prelude, then the kernels.
pub fn source() -> String {
    super::with_prelude(NAME, BODY)
}
