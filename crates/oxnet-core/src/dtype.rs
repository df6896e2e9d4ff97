//! Element types, with MXNet's numeric type flags (used in `.params` files and
//! symbol JSON) and NumPy names.

use crate::error::{Error, Result};
use half::{bf16, f16};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DType {
    F32 = 0,
    F64 = 1,
    F16 = 2,
    U8 = 3,
    I32 = 4,
    I8 = 5,
    I64 = 6,
    Bool = 7,
    /// bfloat16 (MXNet's type flag 12): float32's exponent with 8 bits of mantissa.
    BF16 = 12,
}

pub const ALL_DTYPES: [DType; 9] =
    [DType::F32, DType::F64, DType::F16, DType::U8, DType::I32, DType::I8, DType::I64, DType::Bool, DType::BF16];

impl DType {
    pub fn flag(self) -> i32 {
        self as i32
    }
    pub fn from_flag(flag: i32) -> Result<Self> {
        ALL_DTYPES.iter().copied().find(|d| d.flag() == flag).ok_or_else(|| Error::new(format!("unknown dtype flag {flag}")))
    }
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::F16 | DType::BF16 => 2,
            DType::U8 | DType::I8 | DType::Bool => 1,
        }
    }
    /// NumPy's name for the type.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::F16 => "float16",
            DType::U8 => "uint8",
            DType::I32 => "int32",
            DType::I8 => "int8",
            DType::I64 => "int64",
            DType::Bool => "bool",
            DType::BF16 => "bfloat16",
        }
    }
    pub fn from_name(name: &str) -> Result<Self> {
        Ok(match name {
            "float32" | "float" | "f4" | "<f4" => DType::F32,
            "float64" | "double" | "f8" | "<f8" => DType::F64,
            "float16" | "half" | "f2" | "<f2" => DType::F16,
            "uint8" | "u1" | "|u1" => DType::U8,
            "int32" | "i4" | "<i4" => DType::I32,
            "int8" | "i1" | "|i1" => DType::I8,
            "int64" | "i8" | "<i8" => DType::I64,
            "bool" | "bool_" | "|b1" => DType::Bool,
            "bfloat16" | "bf16" => DType::BF16,
            _ => return Err(Error::new(format!("unknown dtype '{name}'"))),
        })
    }
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }
}

/// The Rust types that can be an NDArray's element. Arithmetic happens in `Acc`
/// (f32 for f16, the type itself otherwise); bool is stored as u8 0/1.
pub trait Element: Copy + Send + Sync + 'static + PartialOrd {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
}

macro_rules! impl_elem {
    ($t:ty, $d:expr) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
    };
}
impl_elem!(f32, DType::F32);
impl_elem!(f64, DType::F64);
impl_elem!(u8, DType::U8);
impl_elem!(i32, DType::I32);
impl_elem!(i8, DType::I8);
impl_elem!(i64, DType::I64);

impl Element for f16 {
    const DTYPE: DType = DType::F16;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
}

impl Element for bf16 {
    const DTYPE: DType = DType::BF16;
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self.to_f64()
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        bf16_from_f64(v)
    }
}

/// `v` rounded to the nearest bfloat16, ties to even. (`half`'s own conversion drops
/// the low 32 bits of the float64 first and so misrounds values just above a tie.)
/// Through float32, whose rounding can only create a false tie, which is resolved
/// here by the side of the tie `v` is on.
#[inline(always)]
pub fn bf16_from_f64(v: f64) -> bf16 {
    let f = v as f32;
    let bits = f.to_bits();
    if bits & 0xFFFF == 0x8000 && f.is_finite() && f as f64 != v {
        let away = v.abs() > (f as f64).abs();
        return bf16::from_bits(((bits >> 16) + away as u32) as u16);
    }
    bf16::from_f32(f)
}

/// Runs `$body` with `$T` bound to the Rust type of `$dtype` (bool as `u8`).
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident, $body:block) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            $crate::dtype::DType::U8 | $crate::dtype::DType::Bool => {
                type $T = u8;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
        }
    };
}

/// Binds `$T` to the float element type of `$d`: `f64`, `f16`, `bf16` or `f32`.
/// Callers' shape/type inference has refused other dtypes; one that slips through
/// stops the op (the op guard makes it an MXNetError naming the op) instead of
/// running a float kernel over integer data.
#[macro_export]
macro_rules! with_float {
    ($d:expr, $T:ident, $body:block) => {
        match $d {
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            other => $crate::dtype::not_a_float(other),
        }
    };
}

/// `with_float!` reached with a non-float dtype.
#[cold]
pub fn not_a_float(d: DType) -> ! {
    panic!("this operator computes in floating point only; got {} data", d.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_float_binds_float_types_and_refuses_the_others() {
        let size = |d: DType| -> usize { crate::with_float!(d, T, { std::mem::size_of::<T>() }) };
        for d in ALL_DTYPES {
            let got = std::panic::catch_unwind(|| size(d));
            match got {
                Ok(n) => assert!(d.is_float() && n == d.size(), "{d:?}"),
                Err(p) => {
                    assert!(!d.is_float(), "{d:?}");
                    assert!(crate::engine::panic_message(p).contains(d.name()));
                }
            }
        }
    }

    #[test]
    fn bf16_rounds_float64_to_nearest_even() {
        // 0x425e8005 (just above a tie) rounds up; exact ties go to even.
        assert_eq!(bf16_from_f64(f32::from_bits(0x425e_8005) as f64).to_bits(), 0x425f);
        assert_eq!(bf16_from_f64(f32::from_bits(0x425e_8000) as f64).to_bits(), 0x425e);
        assert_eq!(bf16_from_f64(f32::from_bits(0x425f_8000) as f64).to_bits(), 0x4260);
        // float64 values just beside a float32 value that is a bfloat16 tie.
        let tie = f32::from_bits(0x425e_8000) as f64;
        assert_eq!(bf16_from_f64(tie + tie * 1e-12).to_bits(), 0x425f);
        assert_eq!(bf16_from_f64(-(tie + tie * 1e-12)).to_bits(), 0xc25f);
        assert_eq!(bf16_from_f64(tie - tie * 1e-12).to_bits(), 0x425e);
        assert!(bf16_from_f64(f64::NAN).is_nan());
        assert_eq!(bf16_from_f64(f64::INFINITY).to_bits(), 0x7f80);
        assert_eq!(DType::from_flag(12).unwrap(), DType::BF16);
        assert_eq!(DType::from_name("bfloat16").unwrap().size(), 2);
    }
}
