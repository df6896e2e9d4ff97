//! `potrf` and `trsm` through the registry, on both sides of `SMALL_N` (the in-place
//! small-matrix kernels below it, `faer` above), against the `faer` path's own
//! functions as the reference, for every flag combination and both float dtypes.

use super::{op_tri, trsm_one, SMALL_N};
use crate::dtype::Element;
use crate::op::{call1, Value};
use crate::{Context, NDArray};
use faer::{Mat, Side};

fn vals(len: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(7);
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// `batch` symmetric positive definite `n × n` matrices, row-major.
fn spd(batch: usize, n: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for b in 0..batch {
        let r = vals(n * n, 31 + b as u64);
        for i in 0..n {
            for j in 0..n {
                out.push((0..n).map(|l| r[i * n + l] * r[j * n + l]).sum::<f64>() + if i == j { n as f64 } else { 0.0 });
            }
        }
    }
    out
}

fn mat(v: &[f64], off: usize, r: usize, c: usize) -> Mat<f64> {
    Mat::from_fn(r, c, |i, j| v[off + i * c + j])
}

fn arr<T: Element>(shape: &[usize], v: &[f64]) -> NDArray {
    let t: Vec<T> = v.iter().map(|x| T::from_f64(*x)).collect();
    NDArray::from_vec(shape, &t, Context::cpu(0)).unwrap()
}

fn run<T: Element>(op: &str, inputs: &[NDArray], params: &[(&str, Value)]) -> Vec<f64> {
    let o = call1(op, inputs, params).unwrap();
    o.to_vec::<T>().unwrap().into_iter().map(|x| x.to_f64()).collect()
}

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}: element {i}: {g} vs {w}");
    }
}

fn potrf_case<T: Element>(n: usize, tol: f64) {
    let batch = 3;
    let a = spd(batch, n);
    for lower in [true, false] {
        let got = run::<T>("_linalg_potrf", &[arr::<T>(&[batch, n, n], &a)], &[("lower", Value::Bool(lower))]);
        let mut want = Vec::new();
        for b in 0..batch {
            let l = mat(&a, b * n * n, n, n).llt(Side::Lower).unwrap();
            let l = Mat::from_fn(n, n, |r, c| if r >= c { l.L()[(r, c)] } else { 0.0 });
            let f = if lower { l } else { l.transpose().to_owned() };
            want.extend((0..n * n).map(|x| f[(x / n, x % n)]));
        }
        close(&got, &want, tol, &format!("potrf n={n} lower={lower} {}", T::DTYPE.name()));
    }
}

fn trsm_case<T: Element>(n: usize, other: usize, tol: f64) {
    let batch = 2;
    for right in [false, true] {
        let (m, k) = if right { (other, n) } else { (n, other) };
        // Triangles with a dominant diagonal; both triangles filled (the op reads one).
        let mut a = vals(batch * n * n, 5);
        for b in 0..batch {
            for i in 0..n {
                a[b * n * n + i * n + i] = 1.0 + n as f64 / 2.0 + a[b * n * n + i * n + i].abs();
            }
        }
        let bm = vals(batch * m * k, 9);
        for lower in [true, false] {
            for tr in [false, true] {
                for alpha in [1.0, -0.75] {
                    let params = [
                        ("transpose", Value::Bool(tr)),
                        ("rightside", Value::Bool(right)),
                        ("lower", Value::Bool(lower)),
                        ("alpha", Value::Float(alpha)),
                    ];
                    let got = run::<T>("_linalg_trsm", &[arr::<T>(&[batch, n, n], &a), arr::<T>(&[batch, m, k], &bm)], &params);
                    let mut want = Vec::new();
                    for b in 0..batch {
                        let (t, tl) = op_tri(&mat(&a, b * n * n, n, n), lower, tr);
                        let x = trsm_one(&t, tl, &mat(&bm, b * m * k, m, k), alpha, right);
                        want.extend((0..m * k).map(|i| x[(i / k, i % k)]));
                    }
                    let what =
                        format!("trsm n={n} m={m} k={k} right={right} lower={lower} transpose={tr} alpha={alpha} {}", T::DTYPE.name());
                    close(&got, &want, tol, &what);
                }
            }
        }
    }
}

#[test]
fn potrf_small_and_large_match_faer() {
    for n in [1, 2, 5, 16, 33, SMALL_N, SMALL_N + 3] {
        potrf_case::<f64>(n, 1e-12);
        potrf_case::<f32>(n, 1e-4);
    }
}

#[test]
fn trsm_small_and_large_match_faer() {
    for (n, other) in [(1, 1), (3, 4), (8, 2), (32, 32), (SMALL_N, 7), (SMALL_N + 2, 5)] {
        trsm_case::<f64>(n, other, 1e-11);
        trsm_case::<f32>(n, other, 1e-4);
    }
}

fn error_case<T: Element>() {
    let n = 4;
    let batch = 40;
    let mut a = spd(batch, n);
    for bad in [17, 23] {
        a[bad * n * n + 5] = -100.0; // (1, 1) of matrix `bad`
    }
    let x = arr::<T>(&[batch, n, n], &a);
    let before = x.to_vec::<T>().unwrap();
    let err = call1("_linalg_potrf", &[x.clone()], &[]).and_then(|o| o.wait_to_read()).unwrap_err().to_string();
    assert!(err.contains("_linalg_potrf") && err.contains("batch index 17") && err.contains("positive definite"), "{err}");
    assert!(x.to_vec::<T>().unwrap() == before, "the input changed");
}

#[test]
fn potrf_small_error_names_first_failing_index_and_keeps_input() {
    error_case::<f32>();
    error_case::<f64>();
}
