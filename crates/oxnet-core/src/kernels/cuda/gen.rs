//! CUDA C generated from one description per op family.
//!
//! Each family (unary, binary, scalar, broadcast, reduce, cast, ...) has one table of
//! op descriptions (name plus a float and an integer expression) and one kernel
//! template; [`sources`] instantiates every template for every storage type and emits
//! one NVRTC source per (family, type). Kernel names come from [`kernel_name`], so
//! launchers and sources cannot disagree.
//!
//! Arithmetic follows the CPU kernels: float16/bfloat16 load into float32 and store
//! back rounded, float32 and float64 compute in their own type, every integer type
//! (and bool) computes in 64-bit integers. No CUDA header is included: half
//! conversions are inline PTX, so NVRTC needs nothing but its own library.

use crate::dtype::DType;

/// Largest number of axes the strided kernels (broadcast, reduce, gather) index.
pub const MAX_DIMS: usize = 8;

/// One storage type as the kernels see it.
#[derive(Clone, Copy, Debug)]
pub struct CType {
    /// Suffix of kernel names (`f32`, `bf16`, ...).
    pub tag: &'static str,
    /// The C type of one stored element.
    pub storage: &'static str,
    /// True for types whose arithmetic is floating point.
    pub float: bool,
    /// Smallest and largest value (identities of max and min reductions).
    pub lowest: &'static str,
    pub highest: &'static str,
}

const fn ct(tag: &'static str, storage: &'static str, float: bool, lowest: &'static str, highest: &'static str) -> CType {
    CType { tag, storage, float, lowest, highest }
}

/// Every storage type the CUDA kernels are generated for: the CPU registry's types
/// plus bfloat16 (ready for when the dtype list gains it).
pub const TYPES: [CType; 9] = [
    ct("f32", "float", true, "-__int_as_float(0x7f800000)", "__int_as_float(0x7f800000)"),
    ct("f64", "double", true, "-__longlong_as_double(0x7ff0000000000000LL)", "__longlong_as_double(0x7ff0000000000000LL)"),
    ct("f16", "ox_f16", true, "-__int_as_float(0x7f800000)", "__int_as_float(0x7f800000)"),
    ct("bf16", "ox_bf16", true, "-__int_as_float(0x7f800000)", "__int_as_float(0x7f800000)"),
    ct("u8", "unsigned char", false, "0LL", "255LL"),
    ct("i32", "int", false, "(-2147483647LL - 1)", "2147483647LL"),
    ct("i8", "signed char", false, "-128LL", "127LL"),
    ct("i64", "long long", false, "(-9223372036854775807LL - 1)", "9223372036854775807LL"),
    ct("bool", "ox_bool", false, "0LL", "1LL"),
];

/// The kernel type of an oxnet dtype.
pub fn ctype(d: DType) -> &'static CType {
    let tag = match d {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::U8 => "u8",
        DType::I32 => "i32",
        DType::I8 => "i8",
        DType::I64 => "i64",
        DType::Bool => "bool",
    };
    ctype_by_tag(tag).expect("every dtype has a kernel type")
}

fn ctype_by_tag(tag: &str) -> Option<&'static CType> {
    TYPES.iter().find(|t| t.tag == tag)
}

/// An op of the elementwise families: its key in kernel names, the float expression
/// (in `a`, `b`; `$f(` is a math function, `expf` for float and `exp` for double)
/// and the 64-bit integer expression (None: computed through double).
pub struct EwOp {
    pub key: &'static str,
    pub float: &'static str,
    pub int: Option<&'static str>,
}

const fn ew(key: &'static str, float: &'static str, int: Option<&'static str>) -> EwOp {
    EwOp { key, float, int }
}

/// Unary ops (registry name = key) in `a`.
pub const UNARY: &[EwOp] = &[
    ew("negative", "-a", Some("(long long)(0ULL - (unsigned long long)a)")),
    ew("abs", "$fabs(a)", Some("(a < 0 ? (long long)(0ULL - (unsigned long long)a) : a)")),
    ew("sign", "(a > 0 ? (C)1 : (a < 0 ? (C)-1 : (C)0 * a))", Some("(a > 0 ? 1LL : (a < 0 ? -1LL : 0LL))")),
    ew("floor", "$floor(a)", Some("a")),
    ew("ceil", "$ceil(a)", Some("a")),
    ew("round", "$round(a)", Some("a")),
    ew("rint", "$rint(a)", Some("a")),
    ew("trunc", "$trunc(a)", Some("a")),
    ew("fix", "$trunc(a)", Some("a")),
    ew("sqrt", "$sqrt(a)", None),
    ew("rsqrt", "(C)1 / $sqrt(a)", None),
    ew("cbrt", "$cbrt(a)", None),
    ew("rcbrt", "(C)1 / $cbrt(a)", None),
    ew("square", "a * a", Some("(long long)((unsigned long long)a * (unsigned long long)a)")),
    ew("reciprocal", "(C)1 / a", Some("(a == 0 ? 0LL : 1LL / a)")),
    ew("exp", "$exp(a)", None),
    ew("expm1", "$expm1(a)", None),
    ew("log", "$log(a)", None),
    ew("log10", "$log10(a)", None),
    ew("log2", "$log2(a)", None),
    ew("log1p", "$log1p(a)", None),
    ew("sin", "$sin(a)", None),
    ew("cos", "$cos(a)", None),
    ew("tan", "$tan(a)", None),
    ew("arcsin", "$asin(a)", None),
    ew("arccos", "$acos(a)", None),
    ew("arctan", "$atan(a)", None),
    ew("sinh", "$sinh(a)", None),
    ew("cosh", "$cosh(a)", None),
    ew("tanh", "$tanh(a)", None),
    ew("arcsinh", "$asinh(a)", None),
    ew("arccosh", "$acosh(a)", None),
    ew("arctanh", "$atanh(a)", None),
    ew("degrees", "a * (C)57.29577951308232", None),
    ew("radians", "a * (C)0.017453292519943295", None),
    ew("sigmoid", "(C)1 / ((C)1 + $exp(-a))", None),
    ew("relu", "((a > 0 || a != a) ? a : (C)0)", Some("(a > 0 ? a : 0LL)")),
    ew("softsign", "a / ((C)1 + $fabs(a))", None),
    ew("logical_not", "(C)(a == 0)", Some("(long long)(a == 0)")),
];

/// Binary ops in `a`, `b`, with the registry names of their same-shape, broadcast,
/// scalar and reversed-scalar forms.
pub struct BinOp {
    pub op: EwOp,
    pub elem: &'static str,
    pub bcast: &'static str,
    pub scalar: &'static str,
    pub rscalar: Option<&'static str>,
}

const fn bin(op: EwOp, elem: &'static str, bcast: &'static str, scalar: &'static str, rscalar: Option<&'static str>) -> BinOp {
    BinOp { op, elem, bcast, scalar, rscalar }
}

const MOD_F: &str = "(b == 0 ? (C)0 : ox_fmod_floor(a, b))";
const MOD_I: &str = "(b == 0 ? 0LL : ((a % b != 0 && ((a % b < 0) != (b < 0))) ? a % b + b : a % b))";

pub const BINARY: &[BinOp] = &[
    bin(
        ew("add", "a + b", Some("(long long)((unsigned long long)a + (unsigned long long)b)")),
        "elemwise_add",
        "broadcast_add",
        "_plus_scalar",
        None,
    ),
    bin(
        ew("sub", "a - b", Some("(long long)((unsigned long long)a - (unsigned long long)b)")),
        "elemwise_sub",
        "broadcast_sub",
        "_minus_scalar",
        Some("_rminus_scalar"),
    ),
    bin(
        ew("mul", "a * b", Some("(long long)((unsigned long long)a * (unsigned long long)b)")),
        "elemwise_mul",
        "broadcast_mul",
        "_mul_scalar",
        None,
    ),
    bin(
        ew("div", "a / b", Some("(b == 0 ? 0LL : (b == -1 ? (long long)(0ULL - (unsigned long long)a) : a / b))")),
        "elemwise_div",
        "broadcast_div",
        "_div_scalar",
        Some("_rdiv_scalar"),
    ),
    bin(ew("mod", MOD_F, Some(MOD_I)), "_mod", "broadcast_mod", "_mod_scalar", Some("_rmod_scalar")),
    bin(ew("power", "$pow(a, b)", None), "_power", "broadcast_power", "_power_scalar", Some("_rpower_scalar")),
    bin(ew("maximum", "((a > b || a != a) ? a : b)", Some("(a > b ? a : b)")), "_maximum", "broadcast_maximum", "_maximum_scalar", None),
    bin(ew("minimum", "((a < b || a != a) ? a : b)", Some("(a < b ? a : b)")), "_minimum", "broadcast_minimum", "_minimum_scalar", None),
    bin(ew("equal", "(C)(a == b)", Some("(long long)(a == b)")), "_equal", "broadcast_equal", "_equal_scalar", None),
    bin(ew("not_equal", "(C)(a != b)", Some("(long long)(a != b)")), "_not_equal", "broadcast_not_equal", "_not_equal_scalar", None),
    bin(ew("greater", "(C)(a > b)", Some("(long long)(a > b)")), "_greater", "broadcast_greater", "_greater_scalar", None),
    bin(
        ew("greater_equal", "(C)(a >= b)", Some("(long long)(a >= b)")),
        "_greater_equal",
        "broadcast_greater_equal",
        "_greater_equal_scalar",
        None,
    ),
    bin(ew("lesser", "(C)(a < b)", Some("(long long)(a < b)")), "_lesser", "broadcast_lesser", "_lesser_scalar", None),
    bin(
        ew("lesser_equal", "(C)(a <= b)", Some("(long long)(a <= b)")),
        "_lesser_equal",
        "broadcast_lesser_equal",
        "_lesser_equal_scalar",
        None,
    ),
    bin(ew("hypot", "$hypot(a, b)", None), "_hypot", "broadcast_hypot", "_hypot_scalar", None),
    bin(
        ew("logical_and", "(C)(a != 0 && b != 0)", Some("(long long)(a != 0 && b != 0)")),
        "_logical_and",
        "broadcast_logical_and",
        "_logical_and_scalar",
        None,
    ),
    bin(
        ew("logical_or", "(C)(a != 0 || b != 0)", Some("(long long)(a != 0 || b != 0)")),
        "_logical_or",
        "broadcast_logical_or",
        "_logical_or_scalar",
        None,
    ),
    bin(
        ew("logical_xor", "(C)((a != 0) != (b != 0))", Some("(long long)((a != 0) != (b != 0))")),
        "_logical_xor",
        "broadcast_logical_xor",
        "_logical_xor_scalar",
        None,
    ),
];

/// Reductions: key (= registry name), per-element accumulate statement on `acc` and
/// `v` for floats and integers, identity (`LOWEST`/`HIGHEST` are the type's limits).
pub struct RedOp {
    pub key: &'static str,
    pub init: &'static str,
    pub float: &'static str,
    pub int: &'static str,
}

pub const REDUCE: &[RedOp] = &[
    RedOp { key: "sum", init: "0", float: "acc += v;", int: "acc = (long long)((unsigned long long)acc + (unsigned long long)v);" },
    RedOp { key: "mean", init: "0", float: "acc += v;", int: "acc = (long long)((unsigned long long)acc + (unsigned long long)v);" },
    RedOp { key: "prod", init: "1", float: "acc *= v;", int: "acc = (long long)((unsigned long long)acc * (unsigned long long)v);" },
    RedOp {
        key: "nansum",
        init: "0",
        float: "if (v == v) acc += v;",
        int: "acc = (long long)((unsigned long long)acc + (unsigned long long)v);",
    },
    RedOp {
        key: "nanprod",
        init: "1",
        float: "if (v == v) acc *= v;",
        int: "acc = (long long)((unsigned long long)acc * (unsigned long long)v);",
    },
    RedOp { key: "max", init: "LOWEST", float: "if (v > acc || v != v) acc = v;", int: "if (v > acc) acc = v;" },
    RedOp { key: "min", init: "HIGHEST", float: "if (v < acc || v != v) acc = v;", int: "if (v < acc) acc = v;" },
];

/// Families of generated kernels; one source per (family, type) except where noted.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Family {
    Unary,
    Binary,
    Scalar,
    Broadcast,
    Reduce,
    /// Casts from one type to every type (source per source type).
    Cast,
    /// Fill with a value, and arange.
    Fill,
    /// Dtype-agnostic strided gather by element size (one source for all).
    Gather,
    Softmax,
    /// `take` and `one_hot` (source per data type, every index type inside).
    Index,
    /// Philox-4x32-10 uniform and normal (float types only).
    Random,
}

pub const FAMILIES: [Family; 11] = [
    Family::Unary,
    Family::Binary,
    Family::Scalar,
    Family::Broadcast,
    Family::Reduce,
    Family::Cast,
    Family::Fill,
    Family::Gather,
    Family::Softmax,
    Family::Index,
    Family::Random,
];

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Unary => "unary",
            Family::Binary => "binary",
            Family::Scalar => "scalar",
            Family::Broadcast => "bcast",
            Family::Reduce => "reduce",
            Family::Cast => "cast",
            Family::Fill => "fill",
            Family::Gather => "gather",
            Family::Softmax => "softmax",
            Family::Index => "index",
            Family::Random => "random",
        }
    }
    /// The types this family has a source for (Gather: one source, tag `any`).
    fn types(self) -> Vec<&'static CType> {
        match self {
            Family::Gather => vec![],
            Family::Softmax | Family::Random => TYPES.iter().filter(|t| t.float).collect(),
            _ => TYPES.iter().collect(),
        }
    }
}

/// Name of the source (module) holding `family`'s kernels for type `tag`.
pub fn source_name(family: Family, tag: &str) -> String {
    if family == Family::Gather {
        "gather".to_string()
    } else {
        format!("{}_{tag}", family.name())
    }
}

/// Name of one kernel: `family_key_tag` (e.g. `binary_add_f32`, `cast_f16_to_i32`).
pub fn kernel_name(family: Family, key: &str, tag: &str) -> String {
    format!("{}_{key}_{tag}", family.name())
}

/// The common prelude of every source: half types, load/store traits, helpers and
/// the block reduction.
pub const PRELUDE: &str = r#"
struct ox_f16 { unsigned short x; };
struct ox_bf16 { unsigned short x; };
struct ox_bool { unsigned char x; };
#define OX_MAX_DIMS 8
struct OxStrided { int ndim; long long shape[OX_MAX_DIMS]; long long stride[OX_MAX_DIMS]; };
struct OxBcast { int ndim; long long shape[OX_MAX_DIMS]; long long sa[OX_MAX_DIMS]; long long sb[OX_MAX_DIMS]; };
struct OxReduce { int nout; long long oshape[OX_MAX_DIMS]; long long ostride[OX_MAX_DIMS];
                  int nred; long long rshape[OX_MAX_DIMS]; long long rstride[OX_MAX_DIMS]; long long rcount; };
template <typename S> struct Ox;
template <> struct Ox<float> { typedef float C; static __device__ __forceinline__ float ld(float v) { return v; }
  static __device__ __forceinline__ float st(float v) { return v; } };
template <> struct Ox<double> { typedef double C; static __device__ __forceinline__ double ld(double v) { return v; }
  static __device__ __forceinline__ double st(double v) { return v; } };
template <> struct Ox<ox_f16> { typedef float C;
  static __device__ __forceinline__ float ld(ox_f16 v) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.x)); return f; }
  static __device__ __forceinline__ ox_f16 st(float f) { ox_f16 r; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.x) : "f"(f)); return r; } };
template <> struct Ox<ox_bf16> { typedef float C;
  static __device__ __forceinline__ float ld(ox_bf16 v) { return __uint_as_float(((unsigned int)v.x) << 16); }
  static __device__ __forceinline__ ox_bf16 st(float f) { ox_bf16 r; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.x) : "f"(f)); return r; } };
template <> struct Ox<ox_bool> { typedef long long C; static __device__ __forceinline__ long long ld(ox_bool v) { return v.x; }
  static __device__ __forceinline__ ox_bool st(long long v) { ox_bool r; r.x = v != 0; return r; } };
#define OX_INT(T) template <> struct Ox<T> { typedef long long C; \
  static __device__ __forceinline__ long long ld(T v) { return (long long)v; } \
  static __device__ __forceinline__ T st(long long v) { return (T)v; } };
OX_INT(unsigned char) OX_INT(signed char) OX_INT(int) OX_INT(long long)
/* float -> integer conversions saturate like the CPU's `as` casts (NaN -> 0). */
template <typename S> struct OxFrom {
  static __device__ __forceinline__ S f(double v) { return Ox<S>::st((typename Ox<S>::C)v); } };
#define OX_SAT(T, LO, HI) template <> struct OxFrom<T> { static __device__ __forceinline__ T f(double v) { \
  return v != v ? (T)0 : (v <= (double)(LO) ? (T)(LO) : (v >= (double)(HI) ? (T)(HI) : (T)(long long)v)); } };
OX_SAT(unsigned char, 0, 255) OX_SAT(signed char, -128, 127) OX_SAT(int, -2147483647 - 1, 2147483647)
template <> struct OxFrom<long long> { static __device__ __forceinline__ long long f(double v) {
  return v != v ? 0LL : (v <= -9.2233720368547758e18 ? (-9223372036854775807LL - 1) : (v >= 9.2233720368547758e18 ? 9223372036854775807LL : (long long)v)); } };
template <> struct OxFrom<ox_bool> { static __device__ __forceinline__ ox_bool f(double v) { ox_bool r; r.x = v != 0; return r; } };
__device__ __forceinline__ float ox_fmod_floor(float a, float b) { float r = fmodf(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
__device__ __forceinline__ double ox_fmod_floor(double a, double b) { double r = fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
#define OX_LOOP(i, n) for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
  i += (unsigned long long)gridDim.x * blockDim.x)
"#;

/// `$f(` -> `f(` (double) or `ff(` (float).
fn math(expr: &str, float32: bool) -> String {
    let mut out = String::with_capacity(expr.len());
    let mut rest = expr;
    while let Some(p) = rest.find('$') {
        out.push_str(&rest[..p]);
        let tail = &rest[p + 1..];
        let end = tail.find('(').unwrap_or(tail.len());
        out.push_str(&tail[..end]);
        if float32 {
            out.push('f');
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The device function computing `op` on the compute type of `t` (`C`).
fn ew_fn(prefix: &str, op: &EwOp, t: &CType, binary: bool) -> String {
    let args = if binary { "C a, C b" } else { "C a" };
    let body = if t.float {
        let f32 = t.storage != "double";
        math(op.float, f32)
    } else {
        match op.int {
            Some(e) => e.to_string(),
            None => {
                let fe = math(op.float, false).replace("(C)", "(double)");
                let (da, db) = ("(double)a", "(double)b");
                let fe = replace_vars(&fe, da, db);
                format!("(long long)({fe})")
            }
        }
    };
    let ctype = if t.float {
        if t.storage == "double" {
            "double"
        } else {
            "float"
        }
    } else {
        "long long"
    };
    format!("typedef {ctype} C_{prefix}_{key};\n__device__ __forceinline__ C_{prefix}_{key} {prefix}_{key}({args}) {{ typedef C_{prefix}_{key} C; return {body}; }}\n",
        key = op.key, args = args.replace('C', &format!("C_{prefix}_{}", op.key)))
}

/// Replaces the identifiers `a` and `b` (whole words) in `e`.
fn replace_vars(e: &str, a: &str, b: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = e.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let word = |ch: char| ch.is_ascii_alphanumeric() || ch == '_';
        let alone = (i == 0 || !word(chars[i - 1])) && (i + 1 == chars.len() || !word(chars[i + 1]));
        match c {
            'a' if alone => out.push_str(a),
            'b' if alone => out.push_str(b),
            _ => out.push(c),
        }
    }
    out
}

fn unary_source(t: &CType) -> String {
    let s = t.storage;
    let mut src = String::new();
    for op in UNARY {
        src.push_str(&ew_fn("u", op, t, false));
        src.push_str(&format!(
            "extern \"C\" __global__ void {k}(const {s}* __restrict__ x, {s}* __restrict__ y, unsigned long long n) {{\n  OX_LOOP(i, n) y[i] = Ox<{s}>::st(u_{key}(Ox<{s}>::ld(x[i])));\n}}\n",
            k = kernel_name(Family::Unary, op.key, t.tag),
            key = op.key
        ));
    }
    // clip: max(lo) then min(hi), NaN kept.
    let c = if t.float {
        if t.storage == "double" {
            "double"
        } else {
            "float"
        }
    } else {
        "long long"
    };
    src.push_str(&format!(
        "extern \"C\" __global__ void {k}(const {s}* __restrict__ x, {s}* __restrict__ y, unsigned long long n, double lo, double hi) {{\n  {c} l = ({c})lo, h = ({c})hi;\n  OX_LOOP(i, n) {{ {c} a = Ox<{s}>::ld(x[i]); a = (a > l || a != a) ? a : l; a = (a < h || a != a) ? a : h; y[i] = Ox<{s}>::st(a); }}\n}}\n",
        k = kernel_name(Family::Unary, "clip", t.tag)
    ));
    src
}

fn binary_source(t: &CType, family: Family) -> String {
    let s = t.storage;
    let c = if t.float {
        if t.storage == "double" {
            "double"
        } else {
            "float"
        }
    } else {
        "long long"
    };
    let mut src = String::new();
    for b in BINARY {
        let op = &b.op;
        src.push_str(&ew_fn("b", op, t, true));
        let k = kernel_name(family, op.key, t.tag);
        let key = op.key;
        let body = match family {
            Family::Binary => format!(
                "(const {s}* __restrict__ x, const {s}* __restrict__ z, {s}* __restrict__ y, unsigned long long n) {{\n  OX_LOOP(i, n) y[i] = Ox<{s}>::st(b_{key}(Ox<{s}>::ld(x[i]), Ox<{s}>::ld(z[i])));\n}}\n"
            ),
            // The scalar arrives as double and is converted to the compute type,
            // as the CPU converts it to the array's dtype.
            Family::Scalar => format!(
                "(const {s}* __restrict__ x, {s}* __restrict__ y, unsigned long long n, double scalar, int rev) {{\n  {c} v = Ox<{s}>::ld(OxFrom<{s}>::f(scalar));\n  if (rev) {{ OX_LOOP(i, n) y[i] = Ox<{s}>::st(b_{key}(v, Ox<{s}>::ld(x[i]))); }}\n  else {{ OX_LOOP(i, n) y[i] = Ox<{s}>::st(b_{key}(Ox<{s}>::ld(x[i]), v)); }}\n}}\n"
            ),
            _ => format!(
                "(const {s}* __restrict__ x, const {s}* __restrict__ z, {s}* __restrict__ y, unsigned long long n, OxBcast p) {{\n  OX_LOOP(i, n) {{\n    unsigned long long r = i; long long ia = 0, ib = 0;\n    for (int d = p.ndim - 1; d >= 0; --d) {{ long long q = r % p.shape[d]; r /= p.shape[d]; ia += q * p.sa[d]; ib += q * p.sb[d]; }}\n    y[i] = Ox<{s}>::st(b_{key}(Ox<{s}>::ld(x[ia]), Ox<{s}>::ld(z[ib])));\n  }}\n}}\n"
            ),
        };
        src.push_str(&format!("extern \"C\" __global__ void {k}{body}"));
    }
    src
}

/// One block per output element; threads stride over the reduced elements, then a
/// shared-memory tree combines them. Half types accumulate in float32.
fn reduce_source(t: &CType) -> String {
    let s = t.storage;
    let acc = if t.float {
        if t.storage == "double" {
            "double"
        } else {
            "float"
        }
    } else {
        "long long"
    };
    let mut src = String::new();
    for r in REDUCE {
        let init = r.init.replace("LOWEST", t.lowest).replace("HIGHEST", t.highest);
        let step = if t.float { r.float } else { r.int };
        let combine = step.replace('v', "sh[threadIdx.x + w]").replace("acc", "sh[threadIdx.x]");
        let fin = match (r.key, t.float, t.tag) {
            ("mean", true, _) => format!("Ox<{s}>::st(({acc})(sh[0] / ({acc})p.rcount))"),
            ("mean", false, "bool") => format!("Ox<{s}>::st(sh[0])"),
            ("mean", false, _) => format!("Ox<{s}>::st(p.rcount == 0 ? 0LL : Ox<{s}>::ld(Ox<{s}>::st(sh[0])) / p.rcount)"),
            _ => format!("Ox<{s}>::st(sh[0])"),
        };
        src.push_str(&format!(
            "extern \"C\" __global__ void {k}(const {s}* __restrict__ x, {s}* __restrict__ y, unsigned long long nout, OxReduce p) {{\n\
  __shared__ {acc} sh[256];\n\
  for (unsigned long long o = blockIdx.x; o < nout; o += gridDim.x) {{\n\
    unsigned long long r = o; long long base = 0;\n\
    for (int d = p.nout - 1; d >= 0; --d) {{ base += (long long)(r % p.oshape[d]) * p.ostride[d]; r /= p.oshape[d]; }}\n\
    {acc} acc = ({acc})({init});\n\
    for (long long j = threadIdx.x; j < p.rcount; j += blockDim.x) {{\n\
      long long q = j, off = base;\n\
      for (int d = p.nred - 1; d >= 0; --d) {{ off += (q % p.rshape[d]) * p.rstride[d]; q /= p.rshape[d]; }}\n\
      {acc} v = Ox<{s}>::ld(x[off]);\n      {step}\n\
    }}\n\
    sh[threadIdx.x] = acc;\n    __syncthreads();\n\
    for (unsigned int w = blockDim.x / 2; w > 0; w >>= 1) {{\n\
      if (threadIdx.x < w) {{ {combine} }}\n      __syncthreads();\n\
    }}\n\
    if (threadIdx.x == 0) y[o] = {fin};\n    __syncthreads();\n\
  }}\n}}\n",
            k = kernel_name(Family::Reduce, r.key, t.tag)
        ));
    }
    src
}

/// Casts from `t` to every type: floats go through double, integers through long
/// long. Float to integer truncates into long long, then wraps into the target as
/// C's casts do (MXNet's `Cast`, and the CPU kernel: -5.0 -> 251 as uint8).
fn cast_source(t: &CType) -> String {
    let s = t.storage;
    let mut src = String::new();
    for d in TYPES.iter() {
        let ds = d.storage;
        let conv = if t.float && !d.float && d.tag != "bool" {
            format!("Ox<{ds}>::st(OxFrom<long long>::f((double)Ox<{s}>::ld(x[i])))")
        } else if t.float {
            format!("OxFrom<{ds}>::f((double)Ox<{s}>::ld(x[i]))")
        } else if d.float {
            format!("Ox<{ds}>::st((typename Ox<{ds}>::C)Ox<{s}>::ld(x[i]))")
        } else {
            format!("Ox<{ds}>::st(Ox<{s}>::ld(x[i]))")
        };
        src.push_str(&format!(
            "extern \"C\" __global__ void {k}(const {s}* __restrict__ x, {ds}* __restrict__ y, unsigned long long n) {{\n  OX_LOOP(i, n) y[i] = {conv};\n}}\n",
            k = kernel_name(Family::Cast, &format!("to_{}", d.tag), t.tag)
        ));
    }
    src
}

fn fill_source(t: &CType) -> String {
    let s = t.storage;
    format!(
        "extern \"C\" __global__ void {fill}({s}* __restrict__ y, unsigned long long n, double v) {{\n  {s} c = OxFrom<{s}>::f(v);\n  OX_LOOP(i, n) y[i] = c;\n}}\n\
extern \"C\" __global__ void {ar}({s}* __restrict__ y, unsigned long long n, double start, double step, unsigned long long repeat) {{\n  OX_LOOP(i, n) y[i] = OxFrom<{s}>::f(start + step * (double)(i / repeat));\n}}\n",
        fill = kernel_name(Family::Fill, "value", t.tag),
        ar = kernel_name(Family::Fill, "arange", t.tag)
    )
}

/// y[i] = x[offset(i)] over an output of `p.shape` read with strides `p.stride`:
/// transpose, slicing with steps, broadcast_to, tile. Only element size matters.
fn gather_source() -> String {
    let mut src = String::new();
    for (tag, ty) in [("b1", "unsigned char"), ("b2", "unsigned short"), ("b4", "unsigned int"), ("b8", "unsigned long long")] {
        src.push_str(&format!(
            "extern \"C\" __global__ void {k}(const {ty}* __restrict__ x, {ty}* __restrict__ y, unsigned long long n, long long base, OxStrided p) {{\n  OX_LOOP(i, n) {{\n    unsigned long long r = i; long long off = base;\n    for (int d = p.ndim - 1; d >= 0; --d) {{ off += (long long)(r % p.shape[d]) * p.stride[d]; r /= p.shape[d]; }}\n    y[i] = x[off];\n  }}\n}}\n",
            k = kernel_name(Family::Gather, "strided", tag)
        ));
    }
    src
}

/// Softmax / log_softmax over one axis of an (outer, k, inner) view: one block per
/// (outer, inner) row, float32 (or float64) accumulation.
fn softmax_source(t: &CType) -> String {
    let s = t.storage;
    let acc = if t.storage == "double" { "double" } else { "float" };
    let (exp, log) = if acc == "double" { ("exp", "log") } else { ("expf", "logf") };
    format!(
        "extern \"C\" __global__ void {k}(const {s}* __restrict__ x, {s}* __restrict__ y, unsigned long long rows, long long k, long long inner, double temperature, int take_log) {{\n\
  __shared__ {acc} sh[256];\n\
  {acc} tinv = ({acc})(1.0 / temperature);\n\
  for (unsigned long long row = blockIdx.x; row < rows; row += gridDim.x) {{\n\
    long long base = (long long)(row / inner) * k * inner + (long long)(row % inner);\n\
    {acc} m = -__int_as_float(0x7f800000);\n\
    for (long long j = threadIdx.x; j < k; j += blockDim.x) {{ {acc} v = ({acc})Ox<{s}>::ld(x[base + j * inner]) * tinv; m = v > m ? v : m; }}\n\
    sh[threadIdx.x] = m; __syncthreads();\n\
    for (unsigned int w = blockDim.x / 2; w > 0; w >>= 1) {{ if (threadIdx.x < w && sh[threadIdx.x + w] > sh[threadIdx.x]) sh[threadIdx.x] = sh[threadIdx.x + w]; __syncthreads(); }}\n\
    m = sh[0]; __syncthreads();\n\
    {acc} sum = 0;\n\
    for (long long j = threadIdx.x; j < k; j += blockDim.x) sum += {exp}(({acc})Ox<{s}>::ld(x[base + j * inner]) * tinv - m);\n\
    sh[threadIdx.x] = sum; __syncthreads();\n\
    for (unsigned int w = blockDim.x / 2; w > 0; w >>= 1) {{ if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w]; __syncthreads(); }}\n\
    sum = sh[0]; __syncthreads();\n\
    {acc} ls = {log}(sum);\n\
    for (long long j = threadIdx.x; j < k; j += blockDim.x) {{\n\
      {acc} v = ({acc})Ox<{s}>::ld(x[base + j * inner]) * tinv - m;\n\
      y[base + j * inner] = Ox<{s}>::st(take_log ? v - ls : {exp}(v) / sum);\n\
    }}\n\
  }}\n}}\n",
        k = kernel_name(Family::Softmax, "axis", t.tag)
    )
}

/// `take` (clip or wrap mode) and `one_hot` for data type `t`, every index type.
fn index_source(t: &CType) -> String {
    let s = t.storage;
    let mut src = String::new();
    for it in TYPES.iter().filter(|i| i.tag != "bool") {
        let is = it.storage;
        src.push_str(&format!(
            "extern \"C\" __global__ void {take}(const {s}* __restrict__ a, const {is}* __restrict__ idx, {s}* __restrict__ y, unsigned long long n, long long nidx, long long axis_len, long long inner, int wrap) {{\n\
  OX_LOOP(i, n) {{\n\
    long long in_ = (long long)(i % inner); long long t = (long long)(i / inner); long long j = t % nidx; long long o = t / nidx;\n\
    long long q = (long long)Ox<{is}>::ld(idx[j]);\n\
    if (wrap) {{ q %= axis_len; if (q < 0) q += axis_len; }} else {{ q = q < 0 ? 0 : (q >= axis_len ? axis_len - 1 : q); }}\n\
    y[i] = a[(o * axis_len + q) * inner + in_];\n  }}\n}}\n\
extern \"C\" __global__ void {oh}(const {is}* __restrict__ idx, {s}* __restrict__ y, unsigned long long n, long long depth, double on, double off) {{\n\
  {s} von = OxFrom<{s}>::f(on), voff = OxFrom<{s}>::f(off);\n\
  OX_LOOP(i, n) {{ long long q = (long long)Ox<{is}>::ld(idx[i / depth]); y[i] = (q == (long long)(i % depth)) ? von : voff; }}\n}}\n",
            take = kernel_name(Family::Index, &format!("take_{}", it.tag), t.tag),
            oh = kernel_name(Family::Index, &format!("one_hot_{}", it.tag), t.tag),
        ));
    }
    src
}

/// Philox-4x32-10 (Salmon et al., 2011): counter = (element group, stream offset),
/// key = seed. Four uniforms per counter; normals by Box-Muller on pairs.
const PHILOX: &str = r#"
struct OxU4 { unsigned int v[4]; };
__device__ __forceinline__ OxU4 ox_philox(unsigned long long ctr, unsigned long long off, unsigned long long seed) {
  unsigned int c0 = (unsigned int)ctr, c1 = (unsigned int)(ctr >> 32), c2 = (unsigned int)off, c3 = (unsigned int)(off >> 32);
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    unsigned int h0 = __umulhi(0xD2511F53u, c0), l0 = 0xD2511F53u * c0;
    unsigned int h1 = __umulhi(0xCD9E8D57u, c2), l1 = 0xCD9E8D57u * c2;
    unsigned int n0 = h1 ^ c1 ^ k0, n2 = h0 ^ c3 ^ k1;
    c0 = n0; c1 = l1; c2 = n2; c3 = l0;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  OxU4 o; o.v[0] = c0; o.v[1] = c1; o.v[2] = c2; o.v[3] = c3; return o;
}
/* (0, 1] with 24 (float) or 32 (double) random bits. */
__device__ __forceinline__ double ox_unit(unsigned int u) { return ((double)u + 1.0) * 2.3283064365386963e-10; }
"#;

fn random_source(t: &CType) -> String {
    let s = t.storage;
    format!(
        "{PHILOX}\
extern \"C\" __global__ void {uni}({s}* __restrict__ y, unsigned long long n, unsigned long long seed, unsigned long long offset, double low, double high) {{\n\
  OX_LOOP(i, n) {{ OxU4 r = ox_philox(i / 4, offset, seed); double u = 1.0 - ox_unit(r.v[i % 4]); y[i] = Ox<{s}>::st((typename Ox<{s}>::C)(low + (high - low) * u)); }}\n}}\n\
extern \"C\" __global__ void {nor}({s}* __restrict__ y, unsigned long long n, unsigned long long seed, unsigned long long offset, double loc, double scale) {{\n\
  OX_LOOP(i, n) {{ OxU4 r = ox_philox(i / 4, offset, seed); unsigned int p = (unsigned int)(i % 4) & ~1u;\n\
    double rad = sqrt(-2.0 * log(ox_unit(r.v[p]))), th = 6.283185307179586 * ox_unit(r.v[p + 1]);\n\
    double z = (i % 2 == 0) ? rad * cos(th) : rad * sin(th);\n\
    y[i] = Ox<{s}>::st((typename Ox<{s}>::C)(loc + scale * z)); }}\n}}\n",
        uni = kernel_name(Family::Random, "uniform", t.tag),
        nor = kernel_name(Family::Random, "normal", t.tag)
    )
}

/// The source of `family` for type `tag` (None where the family has no such type).
pub fn source(family: Family, tag: &str) -> Option<String> {
    let body = if family == Family::Gather {
        gather_source()
    } else {
        let t = ctype_by_tag(tag)?;
        if !family.types().iter().any(|x| x.tag == tag) {
            return None;
        }
        match family {
            Family::Unary => unary_source(t),
            Family::Binary | Family::Scalar | Family::Broadcast => binary_source(t, family),
            Family::Reduce => reduce_source(t),
            Family::Cast => cast_source(t),
            Family::Fill => fill_source(t),
            Family::Softmax => softmax_source(t),
            Family::Index => index_source(t),
            Family::Random => random_source(t),
            Family::Gather => unreachable!(),
        }
    };
    Some(format!("// oxnet generated: {}\n{PRELUDE}\n{body}", source_name(family, tag)))
}

/// Every generated source: (name, CUDA C++ text).
pub fn sources() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for f in FAMILIES {
        if f == Family::Gather {
            v.push((source_name(f, "any"), source(f, "any").expect("gather source")));
            continue;
        }
        for t in f.types() {
            if let Some(s) = source(f, t.tag) {
                v.push((source_name(f, t.tag), s));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_and_type_has_a_source() {
        let all = sources();
        // 8 families over 9 types, softmax and random over 4 float types, one gather.
        assert_eq!(all.len(), 8 * 9 + 2 * 4 + 1);
        let names: std::collections::HashSet<_> = all.iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(names.len(), all.len(), "source names are unique");
        for (name, src) in &all {
            assert!(src.contains("extern \"C\" __global__"), "{name} has kernels");
            assert!(!src.contains('$'), "{name}: every math placeholder is expanded");
        }
    }

    #[test]
    fn kernel_names_match_sources() {
        let s = source(Family::Binary, "f16").unwrap();
        assert!(s.contains(&format!("void {}(", kernel_name(Family::Binary, "add", "f16"))));
        let s = source(Family::Broadcast, "i64").unwrap();
        assert!(s.contains("void bcast_power_i64("));
        let s = source(Family::Cast, "bf16").unwrap();
        assert!(s.contains("void cast_to_i8_bf16("));
        assert!(source(Family::Softmax, "i32").is_none());
        for op in UNARY {
            assert!(source(Family::Unary, "f32").unwrap().contains(&format!("void unary_{}_f32(", op.key)));
        }
    }

    #[test]
    fn math_placeholders_pick_float_or_double() {
        assert_eq!(math("$exp(a) + $pow(a, b)", true), "expf(a) + powf(a, b)");
        assert_eq!(math("$exp(a)", false), "exp(a)");
        assert_eq!(replace_vars("(C)1 / $sqrt(a) + b + ab", "A", "B"), "(C)1 / $sqrt(A) + B + ab");
    }

    #[test]
    fn integer_ops_without_int_expression_go_through_double() {
        let f = ew_fn("u", UNARY.iter().find(|o| o.key == "sqrt").unwrap(), &TYPES[5], false);
        assert!(f.contains("(long long)(sqrt((double)a))"), "{f}");
    }
}
