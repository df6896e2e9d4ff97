//! Hand-written CUDA kernels: misc (see the launchers in `op::cuda_misc`). Kernels are
//! templates over the storage type instantiated as `extern "C"` functions named
//! `misc_<kernel>_<tag>` (tag as in `gen::ctype`, or `b1`/`b2`/`b4`/`b8` for the
//! kernels that only move elements of that many bytes).

/// The source's name (what launchers pass to `Device::function`).
pub const NAME: &str = "misc";

const BODY: &str = r#"/* ---- common ------------------------------------------------------------------ */
struct OxP8 { unsigned long long p[8]; };
struct OxH16 { double v[16]; };
#define OX_VIEW_DIMS 32
struct OxView { int ndim; long long shape[OX_VIEW_DIMS]; long long ss[OX_VIEW_DIMS]; long long ds[OX_VIEW_DIMS]; };
__device__ __forceinline__ float ox_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double ox_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float ox_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double ox_abs(double x) { return fabs(x); }
template <typename C> __device__ __forceinline__ C ox_clip(C x, C bound, bool on) {
  if (!on) return x;
  if (x > bound) return bound;
  if (x < -bound) return -bound;
  return x;
}
template <typename C> __device__ __forceinline__ C ox_sign(C x) { return x > (C)0 ? (C)1 : (x < (C)0 ? (C)-1 : (C)0); }

/* ---- optimizer updates --------------------------------------------------------
   p.p[k]: input k (0 weight, 1 grad, then the states in registry order); p.p[7]: the
   output. h.v[0..5]: lr, wd, rescale_grad, clip_gradient, clip on (1/0); the rest per
   op (see the launcher). Arithmetic in Ox<S>::C (float for f16/f32, double for f64),
   as the CPU's. */
#define OX_OPT_COMMON \
  typedef typename Ox<S>::C C; \
  const C lr = (C)h.v[0], wd = (C)h.v[1], rescale = (C)h.v[2], clipv = (C)h.v[3]; \
  const bool clip_on = h.v[4] != 0.0; (void)lr; (void)wd; (void)rescale; (void)clipv; (void)clip_on; \
  const C one = (C)1; (void)one; \
  S* o = (S*)p.p[7]; const S* w = (const S*)p.p[0]; const S* g = (const S*)p.p[1]; (void)w; (void)g;
#define OX_G(x) ox_clip<C>(rescale * (x), clipv, clip_on)
#define LD(ptr) Ox<S>::ld((ptr)[i])
#define ST(v) Ox<S>::st(v)

template <typename S> __device__ __forceinline__ void opt_sgd(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  C wv = LD(w);
  o[i] = ST((one - lr * wd) * wv - lr * OX_G(LD(g)));
}
template <typename S> __device__ __forceinline__ void opt_sgd_mom(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  const C m = (C)h.v[5]; S* mom = (S*)p.p[2];
  C wv = LD(w);
  C mv = m * LD(mom) - lr * wd * wv - lr * OX_G(LD(g));
  mom[i] = ST(mv);
  o[i] = ST(wv + mv);
}
template <typename S> __device__ __forceinline__ void opt_nag_mom(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  const C m = (C)h.v[5]; S* mom = (S*)p.p[2];
  C wv = LD(w);
  C gr = OX_G(LD(g)) + wd * wv;
  C mv = m * LD(mom) - lr * gr;
  mom[i] = ST(mv);
  o[i] = ST(wv + m * mv - lr * gr);
}
/* mp_*: float32 arithmetic, float32 master weights (and momentum). */
#define OX_MP_COMMON \
  const float lr = (float)h.v[0], wd = (float)h.v[1], rescale = (float)h.v[2], clipv = (float)h.v[3]; \
  const bool clip_on = h.v[4] != 0.0; \
  S* o = (S*)p.p[7]; const S* g = (const S*)p.p[1]; \
  typedef typename Ox<S>::C CS;
#define OX_MPG(x) ox_clip<float>(rescale * (x), clipv, clip_on)
template <typename S> __device__ __forceinline__ void opt_mp_sgd(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_MP_COMMON
  float* w32 = (float*)p.p[2];
  float wv = w32[i];
  float gv = (float)Ox<S>::ld(g[i]);
  float nw = (1.0f - lr * wd) * wv - lr * OX_MPG(gv);
  w32[i] = nw;
  o[i] = Ox<S>::st((CS)nw);
}
template <typename S> __device__ __forceinline__ void opt_mp_sgd_mom(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_MP_COMMON
  const float m = (float)h.v[5];
  float* mom = (float*)p.p[2]; float* w32 = (float*)p.p[3];
  float wv = w32[i];
  float gv = (float)Ox<S>::ld(g[i]);
  float mv = m * mom[i] - lr * wd * wv - lr * OX_MPG(gv);
  mom[i] = mv;
  float nw = wv + mv;
  w32[i] = nw;
  o[i] = Ox<S>::st((CS)nw);
}
template <typename S> __device__ __forceinline__ void opt_mp_nag_mom(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_MP_COMMON
  const float m = (float)h.v[5];
  float* mom = (float*)p.p[2]; float* w32 = (float*)p.p[3];
  float wv = w32[i];
  float gr = OX_MPG((float)Ox<S>::ld(g[i])) + wd * wv;
  float mv = m * mom[i] - lr * gr;
  mom[i] = mv;
  float nw = wv + m * mv - lr * gr;
  w32[i] = nw;
  o[i] = Ox<S>::st((CS)nw);
}
template <typename S> __device__ __forceinline__ void opt_adam(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  const C b1 = (C)h.v[5], b2 = (C)h.v[6], eps = (C)h.v[7];
  S* mean = (S*)p.p[2]; S* var = (S*)p.p[3];
  C wv = LD(w);
  C gr = ox_clip<C>(rescale * LD(g) + wd * wv, clipv, clip_on);
  C mv = b1 * LD(mean) + (one - b1) * gr;
  C vv = b2 * LD(var) + (one - b2) * gr * gr;
  mean[i] = ST(mv);
  var[i] = ST(vv);
  o[i] = ST(wv - lr * mv / (ox_sqrt(vv) + eps));
}
/* h.v[5..]: beta1, beta2, epsilon, beta1^t, beta2^t, clip_grad, clip_grad on */
template <typename S> __device__ __forceinline__ void opt_ftml(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  const C b1 = (C)h.v[5], b2 = (C)h.v[6], eps = (C)h.v[7], b1t = (C)h.v[8], b2t = (C)h.v[9], cg = (C)h.v[10];
  const bool cg_on = h.v[11] != 0.0;
  S* d = (S*)p.p[2]; S* v = (S*)p.p[3]; S* z = (S*)p.p[4];
  C wv = LD(w);
  C gr = ox_clip<C>(rescale * LD(g) + wd * wv, cg, cg_on);
  C vv = b2 * LD(v) + (one - b2) * gr * gr;
  C dt = (one - b1t) / lr * (ox_sqrt(vv / (one - b2t)) + eps);
  C zv = b1 * LD(z) + (one - b1) * gr - (dt - b1 * LD(d)) * wv;
  v[i] = ST(vv);
  z[i] = ST(zv);
  d[i] = ST(dt);
  o[i] = ST(-zv / dt);
}
/* h.v[5..]: gamma1, epsilon, clip_weights, clip_weights on */
template <typename S> __device__ __forceinline__ void opt_rmsprop(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  const C g1 = (C)h.v[5], eps = (C)h.v[6], cw = (C)h.v[7];
  const bool cw_on = h.v[8] != 0.0;
  S* n = (S*)p.p[2];
  C wv = LD(w);
  C gr = ox_clip<C>(rescale * LD(g) + wd * wv, clipv, clip_on);
  C nv = (one - g1) * gr * gr + g1 * LD(n);
  n[i] = ST(nv);
  o[i] = ST(ox_clip<C>(wv - lr * (gr / ox_sqrt(nv + eps)), cw, cw_on));
}
/* h.v[5..]: gamma1, gamma2, epsilon, clip_weights, clip_weights on */
template <typename S> __device__ __forceinline__ void opt_rmspropalex(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  const C g1 = (C)h.v[5], g2 = (C)h.v[6], eps = (C)h.v[7], cw = (C)h.v[8];
  const bool cw_on = h.v[9] != 0.0;
  S* n = (S*)p.p[2]; S* gs = (S*)p.p[3]; S* d = (S*)p.p[4];
  C wv = LD(w);
  C gr = ox_clip<C>(rescale * LD(g) + wd * wv, clipv, clip_on);
  C nv = (one - g1) * gr * gr + g1 * LD(n);
  C gv = (one - g1) * gr + g1 * LD(gs);
  C dv = g2 * LD(d) - lr * (gr / ox_sqrt(nv - gv * gv + eps));
  n[i] = ST(nv);
  gs[i] = ST(gv);
  d[i] = ST(dv);
  o[i] = ST(ox_clip<C>(wv + dv, cw, cw_on));
}
/* h.v[5..]: lamda1, beta */
template <typename S> __device__ __forceinline__ void opt_ftrl(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  const C l1 = (C)h.v[5], beta = (C)h.v[6];
  S* z = (S*)p.p[2]; S* n = (S*)p.p[3];
  C wv = LD(w);
  C gr = OX_G(LD(g));
  C nv0 = LD(n);
  C zv = LD(z) + gr - (ox_sqrt(nv0 + gr * gr) - ox_sqrt(nv0)) * wv / lr;
  C nv = nv0 + gr * gr;
  z[i] = ST(zv);
  n[i] = ST(nv);
  C nw = ox_abs(zv) > l1 ? (ox_sign<C>(zv) * l1 - zv) / ((beta + ox_sqrt(nv)) / lr + wd) : (C)0;
  o[i] = ST(nw);
}
template <typename S> __device__ __forceinline__ void opt_signsgd(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  C wv = LD(w);
  o[i] = ST((one - lr * wd) * wv - lr * ox_sign<C>(LD(g)));
}
/* h.v[5..]: momentum, wd_lh */
template <typename S> __device__ __forceinline__ void opt_signum(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  const C m = (C)h.v[5], wd_lh = (C)h.v[6];
  S* mom = (S*)p.p[2];
  C wv = LD(w);
  C mv = m * LD(mom) - (one - m) * wd * wv - (one - m) * OX_G(LD(g));
  mom[i] = ST(mv);
  o[i] = ST((one - lr * wd_lh) * wv + lr * ox_sign<C>(mv));
}
/* h.v[5..]: beta1, beta2, epsilon, c1, c2 (bias corrections, 1 when off) */
template <typename S> __device__ __forceinline__ void opt_lamb1(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  const C b1 = (C)h.v[5], b2 = (C)h.v[6], eps = (C)h.v[7], c1 = (C)h.v[8], c2 = (C)h.v[9];
  S* mean = (S*)p.p[2]; S* var = (S*)p.p[3];
  C wv = LD(w);
  C gr = OX_G(LD(g));
  C mv = b1 * LD(mean) + (one - b1) * gr;
  C vv = b2 * LD(var) + (one - b2) * gr * gr;
  mean[i] = ST(mv);
  var[i] = ST(vv);
  o[i] = ST((mv / c1) / (ox_sqrt(vv / c2) + eps) + wd * wv);
}
/* lamb phase 2: inputs weight, g, r1, r2 ((1,) each); h.v[0] lr, h.v[5] lower_bound,
   h.v[6] upper_bound. The ratio is computed in double from the stored r1, r2. */
template <typename S> __device__ __forceinline__ void opt_lamb2(unsigned long long i, const OxP8& p, const OxH16& h) {
  typedef typename Ox<S>::C C;
  S* o = (S*)p.p[7]; const S* w = (const S*)p.p[0]; const S* g = (const S*)p.p[1];
  const S* r1p = (const S*)p.p[2]; const S* r2p = (const S*)p.p[3];
  double lr = h.v[0], lo = h.v[5], hi = h.v[6];
  double r1 = (double)Ox<S>::ld(r1p[0]);
  double r2 = (double)Ox<S>::ld(r2p[0]);
  if (lo >= 0.0) r1 = fmax(r1, lo);
  if (hi >= 0.0) r1 = fmin(r1, hi);
  double ratio = (r1 == 0.0 || r2 == 0.0) ? 1.0 : r1 / r2;
  C step = (C)(lr * ratio);
  o[i] = ST(LD(w) - step * LD(g));
}
/* h.v[5]: epsilon */
template <typename S> __device__ __forceinline__ void opt_adagrad(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  const C eps = (C)h.v[5];
  S* hs = (S*)p.p[2];
  C wv = LD(w);
  C gr = OX_G(LD(g));
  C hv = LD(hs) + gr * gr;
  hs[i] = ST(hv);
  o[i] = ST(wv - lr * (gr / ox_sqrt(hv + eps) + wv * wd));
}
/* h.v[5..]: rho, epsilon */
template <typename S> __device__ __forceinline__ void opt_adadelta(unsigned long long i, const OxP8& p, const OxH16& h) {
  OX_OPT_COMMON
  const C rho = (C)h.v[5], eps = (C)h.v[6];
  S* ag = (S*)p.p[2]; S* ad = (S*)p.p[3];
  C wv = LD(w);
  C gr = OX_G(LD(g));
  C agv = rho * LD(ag) + (one - rho) * gr * gr;
  C delta = ox_sqrt(LD(ad) + eps) / ox_sqrt(agv + eps) * gr;
  C adv = rho * LD(ad) + (one - rho) * delta * delta;
  ag[i] = ST(agv);
  ad[i] = ST(adv);
  o[i] = ST(wv - (delta + wd * wv));
}
#undef LD
#undef ST

#define OX_OPT_KERNEL(NAME, FN, TAG, S) \
  extern "C" __global__ void misc_##NAME##_##TAG(unsigned long long n, OxP8 p, OxH16 h) { \
    OX_LOOP(i, n) { FN<S>(i, p, h); } }
#define OX_OPT_ALL(NAME, FN) OX_OPT_KERNEL(NAME, FN, f32, float) OX_OPT_KERNEL(NAME, FN, f64, double) \
  OX_OPT_KERNEL(NAME, FN, f16, ox_f16) OX_OPT_KERNEL(NAME, FN, bf16, ox_bf16)
OX_OPT_ALL(sgd_update, opt_sgd)
OX_OPT_ALL(sgd_mom_update, opt_sgd_mom)
OX_OPT_ALL(nag_mom_update, opt_nag_mom)
OX_OPT_ALL(mp_sgd_update, opt_mp_sgd)
OX_OPT_ALL(mp_sgd_mom_update, opt_mp_sgd_mom)
OX_OPT_ALL(mp_nag_mom_update, opt_mp_nag_mom)
OX_OPT_ALL(adam_update, opt_adam)
OX_OPT_ALL(ftml_update, opt_ftml)
OX_OPT_ALL(rmsprop_update, opt_rmsprop)
OX_OPT_ALL(rmspropalex_update, opt_rmspropalex)
OX_OPT_ALL(ftrl_update, opt_ftrl)
OX_OPT_ALL(signsgd_update, opt_signsgd)
OX_OPT_ALL(signum_update, opt_signum)
OX_OPT_ALL(lamb_update_phase1, opt_lamb1)
OX_OPT_ALL(lamb_update_phase2, opt_lamb2)
OX_OPT_ALL(adagrad_update, opt_adagrad)
OX_OPT_ALL(adadelta_update, opt_adadelta)

/* ---- argmax / argmin ----------------------------------------------------------
   x viewed as (outer, red, inner); one block (256 threads) per output element. The
   position of the maximum (minimum): the first one on ties; a NaN beats every
   number (the first NaN wins), as the CPU's ArgR. */
template <typename C> struct OxLim;
template <> struct OxLim<float> { static __device__ __forceinline__ float lo() { return -__int_as_float(0x7f800000); }
  static __device__ __forceinline__ float hi() { return __int_as_float(0x7f800000); } };
template <> struct OxLim<double> { static __device__ __forceinline__ double lo() { return -__longlong_as_double(0x7ff0000000000000LL); }
  static __device__ __forceinline__ double hi() { return __longlong_as_double(0x7ff0000000000000LL); } };
template <> struct OxLim<long long> { static __device__ __forceinline__ long long lo() { return -9223372036854775807LL - 1; }
  static __device__ __forceinline__ long long hi() { return 9223372036854775807LL; } };

template <typename C, bool MAX> __device__ __forceinline__ void ox_arg_merge(C& av, long long& ai, C bv, long long bi) {
  bool an = av != av, bn = bv != bv;
  bool a_first = ai <= bi;
  if (an && bn) { if (!a_first) { av = bv; ai = bi; } return; }
  if (an) return;
  if (bn) { av = bv; ai = bi; return; }
  bool b_better = MAX ? (bv > av) : (bv < av);
  bool a_better = MAX ? (av > bv) : (av < bv);
  if (b_better) { av = bv; ai = bi; }
  else if (a_better) { }
  else if (!a_first) { av = bv; ai = bi; }
}

template <typename S, bool MAX> __device__ __forceinline__ void ox_argreduce(const S* __restrict__ x, S* __restrict__ y,
    long long outer, long long red, long long inner) {
  typedef typename Ox<S>::C C;
  __shared__ C sv[256];
  __shared__ long long si[256];
  const int t = threadIdx.x;
  const long long nout = outer * inner;
  for (long long j = blockIdx.x; j < nout; j += gridDim.x) {
    long long o = j / inner, in = j % inner;
    C bv = MAX ? OxLim<C>::lo() : OxLim<C>::hi();
    long long bi = 9223372036854775807LL;
    for (long long r = t; r < red; r += blockDim.x) {
      ox_arg_merge<C, MAX>(bv, bi, Ox<S>::ld(x[(o * red + r) * inner + in]), r);
    }
    sv[t] = bv; si[t] = bi;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (t < s) {
        C v = sv[t]; long long k = si[t];
        ox_arg_merge<C, MAX>(v, k, sv[t + s], si[t + s]);
        sv[t] = v; si[t] = k;
      }
      __syncthreads();
    }
    if (t == 0) y[j] = Ox<S>::st((C)si[0]);
    __syncthreads();
  }
}
#define OX_ARG_KERNELS(TAG, S) \
  extern "C" __global__ void misc_argmax_##TAG(const S* x, S* y, long long outer, long long red, long long inner) { \
    ox_argreduce<S, true>(x, y, outer, red, inner); } \
  extern "C" __global__ void misc_argmin_##TAG(const S* x, S* y, long long outer, long long red, long long inner) { \
    ox_argreduce<S, false>(x, y, outer, red, inner); }
OX_ARG_KERNELS(f32, float) OX_ARG_KERNELS(f64, double) OX_ARG_KERNELS(f16, ox_f16) OX_ARG_KERNELS(bf16, ox_bf16)
OX_ARG_KERNELS(u8, unsigned char) OX_ARG_KERNELS(i8, signed char) OX_ARG_KERNELS(i32, int) OX_ARG_KERNELS(i64, long long)

/* ---- pick ----------------------------------------------------------------------
   y[j] = x[(j / inner * n + k) * inner + j % inner] with k = idx[j] resolved by clip
   or wrap; indices of any type, floats truncated toward zero (NaN: 0). Data by size. */
template <typename I> __device__ __forceinline__ long long ox_index(I v) { return Ox<I>::ld(v); }
template <> __device__ __forceinline__ long long ox_index<float>(float v) { return OxFrom<long long>::f((double)v); }
template <> __device__ __forceinline__ long long ox_index<double>(double v) { return OxFrom<long long>::f(v); }
template <> __device__ __forceinline__ long long ox_index<ox_f16>(ox_f16 v) { return OxFrom<long long>::f((double)Ox<ox_f16>::ld(v)); }
template <> __device__ __forceinline__ long long ox_index<ox_bf16>(ox_bf16 v) { return OxFrom<long long>::f((double)Ox<ox_bf16>::ld(v)); }
template <typename T, typename I> __device__ __forceinline__ void ox_pick(const T* __restrict__ x, const I* __restrict__ idx,
    T* __restrict__ y, unsigned long long nout, long long n, long long inner, int wrap) {
  OX_LOOP(j, nout) {
    long long k = ox_index<I>(idx[j]);
    if (wrap) { k %= n; if (k < 0) k += n; }
    else { k = k < 0 ? 0 : (k > n - 1 ? n - 1 : k); }
    long long jj = (long long)j;
    y[j] = x[(jj / inner * n + k) * inner + jj % inner];
  }
}
#define OX_PICK(B, T, IT, I) \
  extern "C" __global__ void misc_pick_##B##_##IT(const T* x, const I* idx, T* y, unsigned long long nout, long long n, \
      long long inner, int wrap) { ox_pick<T, I>(x, idx, y, nout, n, inner, wrap); }
#define OX_PICK_I(B, T) OX_PICK(B, T, f32, float) OX_PICK(B, T, f64, double) OX_PICK(B, T, f16, ox_f16) OX_PICK(B, T, bf16, ox_bf16) \
  OX_PICK(B, T, u8, unsigned char) OX_PICK(B, T, i8, signed char) OX_PICK(B, T, i32, int) OX_PICK(B, T, i64, long long) \
  OX_PICK(B, T, bool, ox_bool)
OX_PICK_I(b1, unsigned char) OX_PICK_I(b2, unsigned short) OX_PICK_I(b4, unsigned int) OX_PICK_I(b8, unsigned long long)

/* ---- strided copies ------------------------------------------------------------
   y[doff + sum c_d ds_d] = x[soff + sum c_d ss_d] over the index space v.shape (the
   CPU's copy_view); by element size. */
template <typename T> __device__ __forceinline__ void ox_view(const T* __restrict__ x, T* __restrict__ y, unsigned long long n,
    long long soff, long long doff, const OxView& v) {
  OX_LOOP(i, n) {
    unsigned long long r = i;
    long long so = soff, dof = doff;
    for (int d = v.ndim - 1; d >= 0; --d) {
      unsigned long long e = (unsigned long long)v.shape[d];
      long long c = (long long)(r % e);
      r /= e;
      so += c * v.ss[d];
      dof += c * v.ds[d];
    }
    y[dof] = x[so];
  }
}
#define OX_VIEW(B, T) extern "C" __global__ void misc_view_##B(const T* x, T* y, unsigned long long n, long long soff, \
    long long doff, OxView v) { ox_view<T>(x, y, n, soff, doff, v); }
OX_VIEW(b1, unsigned char) OX_VIEW(b2, unsigned short) OX_VIEW(b4, unsigned int) OX_VIEW(b8, unsigned long long)

/* ---- strided fill --------------------------------------------------------------
   y[doff + sum c_d ds_d] = value (converted like the CPU's from_f64: saturating for
   integers, != 0 for bool) over the index space v.shape. */
template <typename S> __device__ __forceinline__ void ox_fill_view(S* __restrict__ y, unsigned long long n, long long doff,
    const OxView& v, double value) {
  const S val = OxFrom<S>::f(value);
  OX_LOOP(i, n) {
    unsigned long long r = i;
    long long dof = doff;
    for (int d = v.ndim - 1; d >= 0; --d) {
      unsigned long long e = (unsigned long long)v.shape[d];
      dof += (long long)(r % e) * v.ds[d];
      r /= e;
    }
    y[dof] = val;
  }
}
#define OX_FILL_VIEW(TAG, S) extern "C" __global__ void misc_fill_view_##TAG(S* y, unsigned long long n, long long doff, \
    OxView v, double value) { ox_fill_view<S>(y, n, doff, v, value); }
OX_FILL_VIEW(f32, float) OX_FILL_VIEW(f64, double) OX_FILL_VIEW(f16, ox_f16) OX_FILL_VIEW(bf16, ox_bf16) OX_FILL_VIEW(u8, unsigned char)
OX_FILL_VIEW(i8, signed char) OX_FILL_VIEW(i32, int) OX_FILL_VIEW(i64, long long) OX_FILL_VIEW(bool, ox_bool)

/* ---- _backward_MakeLoss -------------------------------------------------------
   dx = value, or with valid != 0 value / max(1, count(x > thresh)) (then launched as
   one block, which counts before it fills). */
template <typename S> __device__ __forceinline__ void ox_makeloss_bwd(const S* __restrict__ x, S* __restrict__ dx,
    unsigned long long n, double value, int valid, double thresh) {
  typedef typename Ox<S>::C C;
  __shared__ unsigned long long cnt[256];
  double v = value;
  if (valid) {
    unsigned long long k = 0;
    for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) k += ((double)Ox<S>::ld(x[i]) > thresh) ? 1ULL : 0ULL;
    cnt[threadIdx.x] = k;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s) cnt[threadIdx.x] += cnt[threadIdx.x + s];
      __syncthreads();
    }
    unsigned long long total = cnt[0];
    v = value / (double)(total > 0ULL ? total : 1ULL);
  }
  OX_LOOP(i, n) { dx[i] = Ox<S>::st((C)v); }
}
#define OX_MAKELOSS(TAG, S) extern "C" __global__ void misc_makeloss_bwd_##TAG(const S* x, S* dx, unsigned long long n, \
    double value, int valid, double thresh) { ox_makeloss_bwd<S>(x, dx, n, value, valid, thresh); }
OX_MAKELOSS(f32, float) OX_MAKELOSS(f64, double) OX_MAKELOSS(f16, ox_f16) OX_MAKELOSS(bf16, ox_bf16)

/* ---- where ----------------------------------------------------------------------
   y[j] = cond[j / group] != 0 ? a[j] : b[j]; condition of any type (NaN counts as
   true, as the CPU's to_f64() != 0), data by size. */
template <typename I> __device__ __forceinline__ bool ox_true(I v) { return Ox<I>::ld(v) != 0; }
template <> __device__ __forceinline__ bool ox_true<float>(float v) { return v != 0.0f; }
template <> __device__ __forceinline__ bool ox_true<double>(double v) { return v != 0.0; }
template <> __device__ __forceinline__ bool ox_true<ox_f16>(ox_f16 v) { return Ox<ox_f16>::ld(v) != 0.0f; }
template <> __device__ __forceinline__ bool ox_true<ox_bf16>(ox_bf16 v) { return Ox<ox_bf16>::ld(v) != 0.0f; }
template <typename T, typename I> __device__ __forceinline__ void ox_where(const I* __restrict__ cond, const T* __restrict__ a,
    const T* __restrict__ b, T* __restrict__ y, unsigned long long n, unsigned long long group) {
  OX_LOOP(j, n) { y[j] = ox_true<I>(cond[j / group]) ? a[j] : b[j]; }
}
#define OX_WHERE(B, T, IT, I) \
  extern "C" __global__ void misc_where_##B##_##IT(const I* cond, const T* a, const T* b, T* y, unsigned long long n, \
      unsigned long long group) { ox_where<T, I>(cond, a, b, y, n, group); }
#define OX_WHERE_I(B, T) OX_WHERE(B, T, f32, float) OX_WHERE(B, T, f64, double) OX_WHERE(B, T, f16, ox_f16) OX_WHERE(B, T, bf16, ox_bf16) \
  OX_WHERE(B, T, u8, unsigned char) OX_WHERE(B, T, i8, signed char) OX_WHERE(B, T, i32, int) OX_WHERE(B, T, i64, long long) \
  OX_WHERE(B, T, bool, ox_bool)
OX_WHERE_I(b1, unsigned char) OX_WHERE_I(b2, unsigned short) OX_WHERE_I(b4, unsigned int) OX_WHERE_I(b8, unsigned long long)

/* ---- Pad ------------------------------------------------------------------------
   The source index of output coordinate i along an axis (-1: the constant), as the
   CPU's pad_src; mode 0 constant, 1 edge, 2 reflect. */
struct OxPad { int nd; int mode; long long is[OX_MAX_DIMS]; long long os[OX_MAX_DIMS]; long long before[OX_MAX_DIMS]; };
__device__ __forceinline__ long long ox_pad_src(int mode, long long i, long long before, long long n) {
  long long j = i - before;
  if (j >= 0 && j < n) return j;
  if (mode == 0) return -1;
  if (mode == 1) return j < 0 ? 0 : (j > n - 1 ? n - 1 : j);
  long long period = 2 * (n - 1 > 1 ? n - 1 : 1);
  long long m = j % period;
  if (m < 0) m += period;
  if (m >= n) m = period - m;
  return m;
}
/* The flat source offset of output element i (-1: padding). */
__device__ __forceinline__ long long ox_pad_map(const OxPad& p, unsigned long long i) {
  long long off = 0, st = 1;
  unsigned long long r = i;
  bool pad = false;
  for (int d = p.nd - 1; d >= 0; --d) {
    long long c = (long long)(r % (unsigned long long)p.os[d]);
    r /= (unsigned long long)p.os[d];
    long long j = ox_pad_src(p.mode, c, p.before[d], p.is[d]);
    if (j < 0) pad = true;
    off += j * st;
    st *= p.is[d];
  }
  return pad ? -1 : off;
}
template <typename S> __device__ __forceinline__ void ox_pad(const S* __restrict__ x, S* __restrict__ y, unsigned long long n,
    OxPad p, double value) {
  const S v = OxFrom<S>::f(value);
  OX_LOOP(i, n) {
    long long j = ox_pad_map(p, i);
    y[i] = j < 0 ? v : x[j];
  }
}
/* _backward_Pad: acc (double, zeroed) += every output gradient at its source. */
template <typename S> __device__ __forceinline__ void ox_pad_bwd(const S* __restrict__ g, double* __restrict__ acc,
    unsigned long long n, OxPad p) {
  OX_LOOP(i, n) {
    long long j = ox_pad_map(p, i);
    if (j >= 0) atomicAdd(acc + j, (double)Ox<S>::ld(g[i]));
  }
}
template <typename S> __device__ __forceinline__ void ox_from_f64(const double* __restrict__ acc, S* __restrict__ y, unsigned long long n) {
  OX_LOOP(i, n) { y[i] = OxFrom<S>::f(acc[i]); }
}
extern "C" __global__ void misc_zero_f64(double* y, unsigned long long n) { OX_LOOP(i, n) { y[i] = 0.0; } }
#define OX_PAD(TAG, S) \
  extern "C" __global__ void misc_pad_##TAG(const S* x, S* y, unsigned long long n, OxPad p, double value) { \
    ox_pad<S>(x, y, n, p, value); } \
  extern "C" __global__ void misc_pad_bwd_##TAG(const S* g, double* acc, unsigned long long n, OxPad p) { \
    ox_pad_bwd<S>(g, acc, n, p); } \
  extern "C" __global__ void misc_from_f64_##TAG(const double* acc, S* y, unsigned long long n) { ox_from_f64<S>(acc, y, n); }
OX_PAD(f32, float) OX_PAD(f64, double) OX_PAD(f16, ox_f16) OX_PAD(bf16, ox_bf16) OX_PAD(u8, unsigned char) OX_PAD(i8, signed char)
OX_PAD(i32, int) OX_PAD(i64, long long) OX_PAD(bool, ox_bool)

/* ---- add_n ----------------------------------------------------------------------
   y[i] = x0[i] + x1[i] + ... (k <= 32 sources), summed in Ox<S>::C left to right
   and stored once, as the CPU (integers wrap). */
struct OxP32 { unsigned long long p[32]; };
template <typename C> __device__ __forceinline__ C ox_add(C a, C b) { return a + b; }
template <> __device__ __forceinline__ long long ox_add<long long>(long long a, long long b) {
  return (long long)((unsigned long long)a + (unsigned long long)b); }
template <typename S> __device__ __forceinline__ void ox_add_n(S* y, unsigned long long n, const OxP32& p, int k) {
  typedef typename Ox<S>::C C;
  OX_LOOP(i, n) {
    C acc = Ox<S>::ld(((const S*)p.p[0])[i]);
    for (int j = 1; j < k; ++j) acc = ox_add<C>(acc, Ox<S>::ld(((const S*)p.p[j])[i]));
    y[i] = Ox<S>::st(acc);
  }
}
#define OX_ADD_N(TAG, S) extern "C" __global__ void misc_add_n_##TAG(S* y, unsigned long long n, OxP32 p, int k) { \
  ox_add_n<S>(y, n, p, k); }
OX_ADD_N(f32, float) OX_ADD_N(f64, double) OX_ADD_N(f16, ox_f16) OX_ADD_N(bf16, ox_bf16) OX_ADD_N(u8, unsigned char) OX_ADD_N(i8, signed char)
OX_ADD_N(i32, int) OX_ADD_N(i64, long long) OX_ADD_N(bool, ox_bool)

/* ---- topk / sort / argsort --------------------------------------------------------
   One block per line (o, i) of x viewed as (outer, n, inner), n <= 2048: a bitonic
   sort in shared memory of (key, position) pairs under the CPU's total order (NaN
   above every number, ties by position, both directions), then the first k written
   as values (flags & 1), positions (flags & 2, as U) or a 0/1 mask (flags & 4). */
#define OX_SORT_MAX 2048
template <typename C> __device__ __forceinline__ bool ox_sort_before(C av, int ai, C bv, int bi, int n, bool ascend) {
  if (ai >= n || bi >= n) return ai < bi;  /* padding goes last */
  bool an = av != av, bn = bv != bv;
  int ord;
  if (an || bn) ord = an == bn ? 0 : (an ? 1 : -1);
  else ord = av < bv ? -1 : (av > bv ? 1 : 0);
  if (!ascend) ord = -ord;
  if (ord != 0) return ord < 0;
  return ai < bi;
}
template <typename S, typename U> __device__ __forceinline__ void ox_topk(const S* __restrict__ x, S* __restrict__ values,
    U* __restrict__ indices, S* __restrict__ mask, long long n, long long inner, long long lines, long long k, int ascend, int flags) {
  typedef typename Ox<S>::C C;
  typedef typename Ox<U>::C CU;
  __shared__ C keys[OX_SORT_MAX];
  __shared__ int pos[OX_SORT_MAX];
  int P = 1;
  while (P < n) P <<= 1;
  const int t = threadIdx.x;
  for (long long l = blockIdx.x; l < lines; l += gridDim.x) {
    const long long o = l / inner, in = l % inner;
    for (int r = t; r < P; r += blockDim.x) {
      pos[r] = r;
      keys[r] = r < n ? Ox<S>::ld(x[(o * n + r) * inner + in]) : (C)0;
    }
    __syncthreads();
    for (int kk = 2; kk <= P; kk <<= 1) {
      for (int j = kk >> 1; j > 0; j >>= 1) {
        for (int i = t; i < P; i += blockDim.x) {
          int ixj = i ^ j;
          if (ixj > i) {
            bool up = (i & kk) == 0;
            bool sw = up ? ox_sort_before<C>(keys[ixj], pos[ixj], keys[i], pos[i], (int)n, ascend != 0)
                         : ox_sort_before<C>(keys[i], pos[i], keys[ixj], pos[ixj], (int)n, ascend != 0);
            if (sw) {
              C tk = keys[i]; keys[i] = keys[ixj]; keys[ixj] = tk;
              int tp = pos[i]; pos[i] = pos[ixj]; pos[ixj] = tp;
            }
          }
        }
        __syncthreads();
      }
    }
    for (long long j = t; j < k; j += blockDim.x) {
      const long long at = (o * k + j) * inner + in;
      const long long p = pos[j];
      if (flags & 1) values[at] = x[(o * n + p) * inner + in];
      if (flags & 2) indices[at] = Ox<U>::st((CU)p);
    }
    if (flags & 4) {
      for (long long r = t; r < n; r += blockDim.x) mask[(o * n + r) * inner + in] = Ox<S>::st((C)0);
      __syncthreads();
      for (long long j = t; j < k; j += blockDim.x) mask[(o * n + pos[j]) * inner + in] = Ox<S>::st((C)1);
    }
    __syncthreads();
  }
}
#define OX_TOPK(ST, S, UT, U) \
  extern "C" __global__ void misc_topk_##ST##_##UT(const S* x, S* values, U* indices, S* mask, long long n, long long inner, \
      long long lines, long long k, int ascend, int flags) { ox_topk<S, U>(x, values, indices, mask, n, inner, lines, k, ascend, flags); }
#define OX_TOPK_U(ST, S) OX_TOPK(ST, S, f32, float) OX_TOPK(ST, S, f64, double) OX_TOPK(ST, S, f16, ox_f16) OX_TOPK(ST, S, bf16, ox_bf16) \
  OX_TOPK(ST, S, u8, unsigned char) OX_TOPK(ST, S, i32, int) OX_TOPK(ST, S, i64, long long)
OX_TOPK_U(f32, float) OX_TOPK_U(f64, double) OX_TOPK_U(f16, ox_f16) OX_TOPK_U(bf16, ox_bf16) OX_TOPK_U(u8, unsigned char) OX_TOPK_U(i8, signed char)
OX_TOPK_U(i32, int) OX_TOPK_U(i64, long long)

/* ---- norm ----------------------------------------------------------------------------
   acc[j] (double) = the ord-1 or ord-2 norm of output j's reduced elements: mode 0 sum
   of |x|, mode 1 sqrt of the sum of squares, mode 2 (float64 data) the scaled sum of
   squares (scale, ssq) of the CPU's Nrm2, which neither overflows nor underflows. One
   block (256 threads) per output. */
__device__ __forceinline__ void ox_nrm2_merge(double& as, double& aq, double bs, double bq) {
  if (aq != aq || bq != bq || as != as || bs != bs) { as = __longlong_as_double(0x7ff8000000000000LL); aq = as; return; }
  double bigs = as, bigq = aq, smalls = bs, smallq = bq;
  if (!(as >= bs)) { bigs = bs; bigq = bq; smalls = as; smallq = aq; }
  if (bigs == 0.0) { as = 0.0; aq = 0.0; return; }
  if (isinf(bigs)) { as = __longlong_as_double(0x7ff0000000000000LL); aq = 1.0; return; }
  double r = smalls / bigs;
  as = bigs; aq = bigq + smallq * r * r;
}
template <typename S> __device__ __forceinline__ void ox_norm(const S* __restrict__ x, double* __restrict__ acc, const OxReduce& p, int mode) {
  __shared__ double s0[256];
  __shared__ double s1[256];
  const int t = threadIdx.x;
  unsigned long long nout = 1;
  for (int d = 0; d < p.nout; ++d) nout *= (unsigned long long)p.oshape[d];
  for (unsigned long long j = blockIdx.x; j < nout; j += gridDim.x) {
    long long base = 0;
    unsigned long long r = j;
    for (int d = p.nout - 1; d >= 0; --d) { base += (long long)(r % (unsigned long long)p.oshape[d]) * p.ostride[d]; r /= (unsigned long long)p.oshape[d]; }
    double a0 = 0.0, a1 = 0.0;
    for (long long e = t; e < p.rcount; e += blockDim.x) {
      long long off = base;
      unsigned long long q = (unsigned long long)e;
      for (int d = p.nred - 1; d >= 0; --d) { off += (long long)(q % (unsigned long long)p.rshape[d]) * p.rstride[d]; q /= (unsigned long long)p.rshape[d]; }
      double v = (double)Ox<S>::ld(x[off]);
      if (mode == 0) a0 += fabs(v);
      else if (mode == 1) a0 += v * v;
      else { double av = fabs(v); ox_nrm2_merge(a0, a1, av, av == 0.0 ? 0.0 : 1.0); }
    }
    s0[t] = a0; s1[t] = a1;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
      if (t < h) {
        if (mode == 2) { double u0 = s0[t], u1 = s1[t]; ox_nrm2_merge(u0, u1, s0[t + h], s1[t + h]); s0[t] = u0; s1[t] = u1; }
        else s0[t] += s0[t + h];
      }
      __syncthreads();
    }
    if (t == 0) {
      double v;
      if (mode == 0) v = s0[0];
      else if (mode == 1) v = sqrt(s0[0]);
      else v = (s1[0] != s1[0]) ? s1[0] : (s0[0] == 0.0 ? 0.0 : s0[0] * sqrt(s1[0]));
      acc[j] = v;
    }
    __syncthreads();
  }
}
#define OX_NORM(TAG, S) extern "C" __global__ void misc_norm_##TAG(const S* x, double* acc, OxReduce p, int mode) { \
  ox_norm<S>(x, acc, p, mode); }
OX_NORM(f32, float) OX_NORM(f64, double) OX_NORM(f16, ox_f16) OX_NORM(bf16, ox_bf16) OX_NORM(u8, unsigned char) OX_NORM(i8, signed char)
OX_NORM(i32, int) OX_NORM(i64, long long)

/* A float64 result stored as U: floats rounded, integers through a saturating int64
   then wrapped (the CPU's wrap_i64(v as i64)). */
template <typename C> __device__ __forceinline__ C ox_from_double(double v) { return (C)v; }
template <> __device__ __forceinline__ long long ox_from_double<long long>(double v) { return OxFrom<long long>::f(v); }
template <typename U> __device__ __forceinline__ void ox_store_f64(const double* __restrict__ acc, U* __restrict__ y, unsigned long long n) {
  OX_LOOP(i, n) { y[i] = Ox<U>::st(ox_from_double<typename Ox<U>::C>(acc[i])); }
}
#define OX_STORE_F64(TAG, U) extern "C" __global__ void misc_store_f64_##TAG(const double* acc, U* y, unsigned long long n) { \
  ox_store_f64<U>(acc, y, n); }
OX_STORE_F64(f32, float) OX_STORE_F64(f64, double) OX_STORE_F64(f16, ox_f16) OX_STORE_F64(bf16, ox_bf16) OX_STORE_F64(u8, unsigned char)
OX_STORE_F64(i8, signed char) OX_STORE_F64(i32, int) OX_STORE_F64(i64, long long)

/* ---- all_finite, multi_sum_sq -------------------------------------------------------- */
extern "C" __global__ void misc_set_f32(float* y, float v) { if (blockIdx.x == 0 && threadIdx.x == 0) y[0] = v; }
template <typename S> __device__ __forceinline__ void ox_finite(const S* __restrict__ x, unsigned long long n, float* flag) {
  OX_LOOP(i, n) {
    double v = (double)Ox<S>::ld(x[i]);
    if (v != v || isinf(v)) flag[0] = 0.0f;
  }
}
/* acc[0] += sum of squares (double atomics; acc zeroed before). */
template <typename S> __device__ __forceinline__ void ox_sum_sq(const S* __restrict__ x, unsigned long long n, double* acc) {
  __shared__ double sh[256];
  double a = 0.0;
  OX_LOOP(i, n) { double v = (double)Ox<S>::ld(x[i]); a += v * v; }
  sh[threadIdx.x] = a;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h >>= 1) {
    if ((int)threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(acc, sh[0]);
}
#define OX_FINITE(TAG, S) \
  extern "C" __global__ void misc_finite_##TAG(const S* x, unsigned long long n, float* flag) { ox_finite<S>(x, n, flag); } \
  extern "C" __global__ void misc_sum_sq_##TAG(const S* x, unsigned long long n, double* acc) { ox_sum_sq<S>(x, n, acc); }
OX_FINITE(f32, float) OX_FINITE(f64, double) OX_FINITE(f16, ox_f16) OX_FINITE(bf16, ox_bf16) OX_FINITE(u8, unsigned char) OX_FINITE(i8, signed char)
OX_FINITE(i32, int) OX_FINITE(i64, long long) OX_FINITE(bool, ox_bool)

/* ---- _arange, _eye, _linspace ------------------------------------------------------------
   arange: floats start_T + k * step_T (start and step first rounded to the type, as the
   CPU), integers start_i + k * step_i wrapping; element i holds k = i / repeat. */
template <typename S> __device__ __forceinline__ void ox_arange(S* __restrict__ y, unsigned long long n, long long repeat,
    double start, double step, long long start_i, long long step_i, int is_int) {
  const double st = (double)Ox<S>::ld(OxFrom<S>::f(start));
  const double sp = (double)Ox<S>::ld(OxFrom<S>::f(step));
  OX_LOOP(i, n) {
    long long k = (long long)(i / (unsigned long long)repeat);
    if (is_int) {
      long long v = (long long)((unsigned long long)start_i + (unsigned long long)k * (unsigned long long)step_i);
      y[i] = Ox<S>::st((typename Ox<S>::C)v);
    } else {
      y[i] = OxFrom<S>::f(st + (double)k * sp);
    }
  }
}
template <typename S> __device__ __forceinline__ void ox_eye(S* __restrict__ y, long long rows, long long cols, long long k) {
  OX_LOOP(i, (unsigned long long)(rows * cols)) {
    long long r = (long long)i / cols, c = (long long)i % cols;
    y[i] = OxFrom<S>::f(c - r == k ? 1.0 : 0.0);
  }
}
template <typename S> __device__ __forceinline__ void ox_linspace(S* __restrict__ y, unsigned long long n, double start, double step,
    double stop, int last_is_stop) {
  OX_LOOP(i, n) {
    double v = (last_is_stop && i == n - 1) ? stop : start + (double)i * step;
    y[i] = OxFrom<S>::f(v);
  }
}
#define OX_RANGE(TAG, S) \
  extern "C" __global__ void misc_arange_##TAG(S* y, unsigned long long n, long long repeat, double start, double step, \
      long long start_i, long long step_i, int is_int) { ox_arange<S>(y, n, repeat, start, step, start_i, step_i, is_int); } \
  extern "C" __global__ void misc_eye_##TAG(S* y, long long rows, long long cols, long long k) { ox_eye<S>(y, rows, cols, k); } \
  extern "C" __global__ void misc_linspace_##TAG(S* y, unsigned long long n, double start, double step, double stop, \
      int last_is_stop) { ox_linspace<S>(y, n, start, step, stop, last_is_stop); }
OX_RANGE(f32, float) OX_RANGE(f64, double) OX_RANGE(f16, ox_f16) OX_RANGE(bf16, ox_bf16) OX_RANGE(u8, unsigned char) OX_RANGE(i8, signed char)
OX_RANGE(i32, int) OX_RANGE(i64, long long) OX_RANGE(bool, ox_bool)

/* ---- SequenceMask, SequenceLast, SequenceReverse ------------------------------------------
   Data (t, b, r) with axis0, else (b, t, r); lens[item] already clamped to [0, t] (the
   CPU's to_f64().clamp(0, t) as usize; NaN -> 0), or null for t everywhere. */
template <typename L> __device__ __forceinline__ void ox_seq_len(const L* __restrict__ l, long long* __restrict__ out,
    unsigned long long b, long long t) {
  OX_LOOP(i, b) {
    double v = (double)Ox<L>::ld(l[i]);
    out[i] = v != v ? 0 : (v <= 0.0 ? 0 : (v >= (double)t ? t : (long long)v));
  }
}
__device__ __forceinline__ void ox_seq_pos(unsigned long long i, long long t, long long b, long long r, int axis0,
    long long& step, long long& item, long long& q) {
  long long ii = (long long)i;
  q = ii % r;
  if (axis0) { step = ii / (b * r); item = (ii / r) % b; }
  else { item = ii / (t * r); step = (ii / r) % t; }
}
template <typename S> __device__ __forceinline__ void ox_seq_mask(const S* x, S* y, const long long* __restrict__ lens,
    unsigned long long n, long long t, long long b, long long r, int axis0, double value) {
  const S v = OxFrom<S>::f(value);
  OX_LOOP(i, n) {
    long long step, item, q;
    ox_seq_pos(i, t, b, r, axis0, step, item, q);
    long long len = lens ? lens[item] : t;
    y[i] = step < len ? x[i] : v;
  }
}
template <typename S> __device__ __forceinline__ void ox_seq_last(const S* __restrict__ x, S* __restrict__ y,
    const long long* __restrict__ lens, long long t, long long b, long long r, int axis0) {
  OX_LOOP(j, (unsigned long long)(b * r)) {
    long long item = (long long)j / r, q = (long long)j % r;
    long long len = lens ? lens[item] : t;
    long long step = (len > 1 ? len : 1) - 1;
    long long p = axis0 ? (step * b + item) * r : (item * t + step) * r;
    y[j] = x[p + q];
  }
}
template <typename S> __device__ __forceinline__ void ox_seq_last_bwd(const S* __restrict__ g, S* __restrict__ y,
    const long long* __restrict__ lens, unsigned long long n, long long t, long long b, long long r, int axis0) {
  OX_LOOP(i, n) {
    long long step, item, q;
    ox_seq_pos(i, t, b, r, axis0, step, item, q);
    long long len = lens ? lens[item] : t;
    y[i] = step == (len > 1 ? len : 1) - 1 ? g[item * r + q] : Ox<S>::st((typename Ox<S>::C)0);
  }
}
template <typename S> __device__ __forceinline__ void ox_seq_reverse(const S* __restrict__ x, S* __restrict__ y,
    const long long* __restrict__ lens, unsigned long long n, long long t, long long b, long long r) {
  OX_LOOP(i, n) {
    long long step, item, q;
    ox_seq_pos(i, t, b, r, 1, step, item, q);
    long long len = lens ? lens[item] : t;
    long long src = step < len ? len - 1 - step : step;
    y[i] = x[(src * b + item) * r + q];
  }
}
#define OX_SEQ(TAG, S) \
  extern "C" __global__ void misc_seq_len_##TAG(const S* l, long long* out, unsigned long long b, long long t) { \
    ox_seq_len<S>(l, out, b, t); } \
  extern "C" __global__ void misc_seq_mask_##TAG(const S* x, S* y, const long long* lens, unsigned long long n, long long t, \
      long long b, long long r, int axis0, double value) { ox_seq_mask<S>(x, y, lens, n, t, b, r, axis0, value); } \
  extern "C" __global__ void misc_seq_last_##TAG(const S* x, S* y, const long long* lens, long long t, long long b, long long r, \
      int axis0) { ox_seq_last<S>(x, y, lens, t, b, r, axis0); } \
  extern "C" __global__ void misc_seq_last_bwd_##TAG(const S* g, S* y, const long long* lens, unsigned long long n, long long t, \
      long long b, long long r, int axis0) { ox_seq_last_bwd<S>(g, y, lens, n, t, b, r, axis0); } \
  extern "C" __global__ void misc_seq_reverse_##TAG(const S* x, S* y, const long long* lens, unsigned long long n, long long t, \
      long long b, long long r) { ox_seq_reverse<S>(x, y, lens, n, t, b, r); }
OX_SEQ(f32, float) OX_SEQ(f64, double) OX_SEQ(f16, ox_f16) OX_SEQ(bf16, ox_bf16) OX_SEQ(u8, unsigned char) OX_SEQ(i8, signed char)
OX_SEQ(i32, int) OX_SEQ(i64, long long) OX_SEQ(bool, ox_bool)

/* ---- smooth_l1 (in float64, as the CPU) ---------------------------------------------------- */
template <typename S> __device__ __forceinline__ void ox_smooth_l1(const S* x, S* y, unsigned long long n, double s2) {
  OX_LOOP(i, n) {
    double v = (double)Ox<S>::ld(x[i]);
    y[i] = OxFrom<S>::f(fabs(v) < 1.0 / s2 ? 0.5 * v * v * s2 : fabs(v) - 0.5 / s2);
  }
}
template <typename S> __device__ __forceinline__ void ox_smooth_l1_bwd(const S* g, const S* x, S* y, unsigned long long n, double s2) {
  OX_LOOP(i, n) {
    double v = (double)Ox<S>::ld(x[i]);
    double d = fabs(v) < 1.0 / s2 ? s2 * v : (v != v ? v : copysign(1.0, v));
    y[i] = OxFrom<S>::f((double)Ox<S>::ld(g[i]) * d);
  }
}
/* ---- moments: per output (block), the mean then the centred variance, in float64 ------------ */
template <typename S> __device__ __forceinline__ void ox_moments(const S* __restrict__ x, S* __restrict__ mean,
    S* __restrict__ var, const OxReduce& p, double count) {
  __shared__ double sh[256];
  const int t = threadIdx.x;
  unsigned long long nout = 1;
  for (int d = 0; d < p.nout; ++d) nout *= (unsigned long long)p.oshape[d];
  for (unsigned long long j = blockIdx.x; j < nout; j += gridDim.x) {
    long long base = 0;
    unsigned long long r = j;
    for (int d = p.nout - 1; d >= 0; --d) { base += (long long)(r % (unsigned long long)p.oshape[d]) * p.ostride[d]; r /= (unsigned long long)p.oshape[d]; }
    double m = 0.0;
    for (int pass = 0; pass < 2; ++pass) {
      double a = 0.0;
      for (long long e = t; e < p.rcount; e += blockDim.x) {
        long long off = base;
        unsigned long long q = (unsigned long long)e;
        for (int d = p.nred - 1; d >= 0; --d) { off += (long long)(q % (unsigned long long)p.rshape[d]) * p.rstride[d]; q /= (unsigned long long)p.rshape[d]; }
        double v = (double)Ox<S>::ld(x[off]);
        if (pass == 0) a += v; else a += (v - m) * (v - m);
      }
      sh[t] = a;
      __syncthreads();
      for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (t < h) sh[t] += sh[t + h];
        __syncthreads();
      }
      double tot = sh[0];
      __syncthreads();
      if (pass == 0) { m = tot / count; if (t == 0) mean[j] = OxFrom<S>::f(m); }
      else if (t == 0) var[j] = OxFrom<S>::f(tot / count);
    }
  }
}
#define OX_MOM(TAG, S) \
  extern "C" __global__ void misc_smooth_l1_##TAG(const S* x, S* y, unsigned long long n, double s2) { ox_smooth_l1<S>(x, y, n, s2); } \
  extern "C" __global__ void misc_smooth_l1_bwd_##TAG(const S* g, const S* x, S* y, unsigned long long n, double s2) { \
    ox_smooth_l1_bwd<S>(g, x, y, n, s2); } \
  extern "C" __global__ void misc_moments_##TAG(const S* x, S* mean, S* var, OxReduce p, double count) { \
    ox_moments<S>(x, mean, var, p, count); }
OX_MOM(f32, float) OX_MOM(f64, double) OX_MOM(f16, ox_f16) OX_MOM(bf16, ox_bf16) OX_MOM(u8, unsigned char) OX_MOM(i8, signed char)
OX_MOM(i32, int) OX_MOM(i64, long long)
"#;

/// The source: the common prelude, then the kernels.
pub fn source() -> String {
    super::with_prelude(NAME, BODY)
}
