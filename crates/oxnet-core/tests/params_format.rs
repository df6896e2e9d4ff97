//! MXNet 1.9.1 `.params` / pickle compatibility against files MXNet itself wrote.
//!
//! The fixtures and `expected.json` (what MXNet loads from each) come from
//! `tests/fixtures/make_params_fixtures.py`, run with the MXNet oracle.

use half::f16;
use oxnet_core::context::{Context, DeviceType};
use oxnet_core::dtype::Element;
use oxnet_core::io::params::{self, LoadOptions, ShapeSemantics};
use oxnet_core::{DType, NDArray};
use std::path::PathBuf;

// ---------------------------------------------------------------------------------
// A small JSON reader (no dependencies): numbers are kept as their text, so int64
// values and Python's NaN / Infinity tokens survive exactly.

#[derive(Debug, Clone)]
enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    fn get(&self, k: &str) -> &J {
        match self {
            J::Obj(v) => &v.iter().find(|(n, _)| n == k).unwrap_or_else(|| panic!("no key {k}")).1,
            _ => panic!("not an object looking up {k}"),
        }
    }
    fn arr(&self) -> &[J] {
        match self {
            J::Arr(v) => v,
            _ => panic!("not an array: {self:?}"),
        }
    }
    fn obj(&self) -> &[(String, J)] {
        match self {
            J::Obj(v) => v,
            _ => panic!("not an object"),
        }
    }
    fn str(&self) -> &str {
        match self {
            J::Str(s) => s,
            _ => panic!("not a string: {self:?}"),
        }
    }
    fn num(&self) -> &str {
        match self {
            J::Num(s) => s,
            _ => panic!("not a number: {self:?}"),
        }
    }
    fn bool(&self) -> bool {
        match self {
            J::Bool(b) => *b,
            _ => panic!("not a bool: {self:?}"),
        }
    }
    fn f64(&self) -> f64 {
        match self.num() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            s => s.parse().unwrap_or_else(|_| panic!("bad float {s}")),
        }
    }
    fn i64(&self) -> i64 {
        self.num().parse().unwrap_or_else(|_| panic!("bad int {}", self.num()))
    }
    fn usizes(&self) -> Vec<usize> {
        self.arr().iter().map(|d| d.i64() as usize).collect()
    }
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) {
        self.ws();
        assert_eq!(self.s[self.i], c, "expected {} at {}", c as char, self.i);
        self.i += 1;
    }
    fn peek(&mut self) -> u8 {
        self.ws();
        self.s[self.i]
    }
    fn string(&mut self) -> String {
        self.eat(b'"');
        let mut out = Vec::new();
        loop {
            let c = self.s[self.i];
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.s[self.i];
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let h = std::str::from_utf8(&self.s[self.i..self.i + 4]).unwrap();
                            self.i += 4;
                            let ch = char::from_u32(u32::from_str_radix(h, 16).unwrap()).unwrap();
                            out.extend_from_slice(ch.to_string().as_bytes());
                        }
                        other => out.push(other),
                    }
                }
                _ => out.push(c),
            }
        }
        String::from_utf8(out).unwrap()
    }
    fn value(&mut self) -> J {
        match self.peek() {
            b'{' => {
                self.eat(b'{');
                let mut v = Vec::new();
                if self.peek() == b'}' {
                    self.eat(b'}');
                    return J::Obj(v);
                }
                loop {
                    let k = self.string();
                    self.eat(b':');
                    v.push((k, self.value()));
                    if self.peek() == b',' {
                        self.eat(b',');
                    } else {
                        self.eat(b'}');
                        return J::Obj(v);
                    }
                }
            }
            b'[' => {
                self.eat(b'[');
                let mut v = Vec::new();
                if self.peek() == b']' {
                    self.eat(b']');
                    return J::Arr(v);
                }
                loop {
                    v.push(self.value());
                    if self.peek() == b',' {
                        self.eat(b',');
                    } else {
                        self.eat(b']');
                        return J::Arr(v);
                    }
                }
            }
            b'"' => J::Str(self.string()),
            _ => {
                let start = self.i;
                while self.i < self.s.len() && !b",]} \n\r\t".contains(&self.s[self.i]) {
                    self.i += 1;
                }
                match std::str::from_utf8(&self.s[start..self.i]).unwrap() {
                    "true" => J::Bool(true),
                    "false" => J::Bool(false),
                    "null" => J::Null,
                    t => J::Num(t.to_string()),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Fixtures

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/params")
}

fn expected() -> J {
    let text = std::fs::read(fixture_dir().join("expected.json")).expect("expected.json");
    let j = P { s: &text, i: 0 }.value();
    assert_eq!(j.get("mxnet_version").str(), "1.9.1");
    j
}

fn read_fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn semantics(entry: &J) -> ShapeSemantics {
    match entry.get("semantics").str() {
        "np" => ShapeSemantics::Np,
        "legacy" => ShapeSemantics::Legacy,
        s => panic!("semantics {s}"),
    }
}

/// The dense bytes for the expected values of `e` (built from the values, not the hex).
fn bytes_from_values(e: &J, dtype: DType) -> Vec<u8> {
    let vals = e.get("values").arr();
    let mut out = Vec::new();
    for v in vals {
        match dtype {
            DType::F32 => out.extend((v.f64() as f32).to_le_bytes()),
            DType::F64 => out.extend(v.f64().to_le_bytes()),
            DType::F16 => out.extend(f16::from_f64(v.f64()).to_le_bytes()),
            DType::BF16 => out.extend(half::bf16::from_f64(v.f64()).to_le_bytes()),
            DType::U8 | DType::Bool => out.push(u8::try_from(v.i64()).unwrap()),
            DType::I8 => out.extend(i8::try_from(v.i64()).unwrap().to_le_bytes()),
            DType::I32 => out.extend(i32::try_from(v.i64()).unwrap().to_le_bytes()),
            DType::I64 => out.extend(v.i64().to_le_bytes()),
        }
    }
    out
}

/// Checks one loaded array against its expected.json entry.
fn check_array(what: &str, a: &NDArray, info: &params::ArrayInfo, e: &J) {
    let dtype = DType::from_name(e.get("dtype").str()).unwrap();
    assert_eq!(a.shape(), &e.get("shape").usizes()[..], "{what}: shape");
    assert_eq!(a.dtype(), dtype, "{what}: dtype");
    assert_eq!(format!("{:?}", info.format), e.get("format").str(), "{what}: format");
    assert_eq!(info.stype.name(), e.get("stype").str(), "{what}: stype");
    let saved = e.get("saved_ctx").usizes();
    assert_eq!((info.saved_dev_type, info.saved_dev_id), (saved[0] as i32, saved[1] as i32), "{what}: saved ctx");
    let loaded = a.ctx().to_string();
    if saved[0] == 2 && oxnet_core::storage::cuda::num_gpus() > saved[1] as i32 {
        // A machine with that GPU may load it there, as MXNet's CUDA build does.
        assert!(loaded == "cpu(0)" || loaded == format!("gpu({})", saved[1]), "{what}: ctx {loaded}");
    } else {
        assert_eq!(loaded, e.get("loaded_ctx").str(), "{what}: loaded ctx");
    }
    let data = a.read_bytes().unwrap();
    assert_eq!(hex(&data), e.get("hex").str(), "{what}: data bytes");
    // The values, read through the typed path.
    let want = e.get("values").arr();
    assert_eq!(want.len(), a.size(), "{what}: number of values");
    oxnet_core::with_dtype!(dtype, T, {
        let got = a.to_vec::<T>().unwrap();
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let g = g.to_f64();
            if dtype.is_float() {
                let w = w.f64();
                assert!(g == w || g.is_nan() && w.is_nan(), "{what}[{i}]: {g} != {w}");
            } else if dtype == DType::I64 {
                // Exact, beyond 2^53.
                let g64 = i64::from_le_bytes(data[i * 8..i * 8 + 8].try_into().unwrap());
                assert_eq!(g64, w.i64(), "{what}[{i}]");
            } else {
                assert_eq!(g, w.i64() as f64, "{what}[{i}]");
            }
        }
    });
    assert_eq!(bytes_from_values(e, dtype), data, "{what}: values and bytes of expected.json agree");
}

#[test]
fn fixtures_load_to_what_mxnet_loads() {
    let exp = expected();
    let files = exp.get("files").obj();
    assert!(files.len() >= 11);
    for (name, entry) in files {
        let bytes = read_fixture(name);
        let loaded = params::load_detailed(&bytes, &LoadOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let names: Vec<&str> = entry.get("names").arr().iter().map(|n| n.str()).collect();
        assert_eq!(loaded.names, names, "{name}: names");
        let arrays = entry.get("arrays").arr();
        assert_eq!(loaded.arrays.len(), arrays.len(), "{name}: count");
        assert_eq!(entry.get("kind").str() == "dict", !loaded.names.is_empty(), "{name}: kind");
        for (i, ((a, info), e)) in loaded.arrays.iter().zip(&loaded.info).zip(arrays).enumerate() {
            check_array(&format!("{name}[{i}]"), a, info, e);
        }
        // The file-path and plain entry points agree.
        let (arrs, nms) = params::load_file(fixture_dir().join(name)).unwrap();
        assert_eq!((arrs.len(), nms), (loaded.arrays.len(), loaded.names.clone()));
    }
    for (name, e) in exp.get("raw").obj() {
        let bytes = read_fixture(name);
        let (a, info) = params::load_raw_bytes_detailed(&bytes, &LoadOptions::default()).unwrap();
        check_array(name, &a, &info, e);
    }
}

fn ctx_of(e: &J) -> Context {
    let c = e.get("saved_ctx").usizes();
    Context { dev_type: DeviceType::from_i32(c[0] as i32).unwrap(), dev_id: c[1] as i32 }
}

/// An oxnet array with the expected content, on the context the file records.
fn build(e: &J) -> NDArray {
    let dtype = DType::from_name(e.get("dtype").str()).unwrap();
    let a = NDArray::empty(&e.get("shape").usizes(), ctx_of(e), dtype).unwrap();
    a.write_bytes(&bytes_from_values(e, dtype)).unwrap();
    a
}

#[test]
fn saving_the_same_content_writes_mxnets_bytes() {
    let exp = expected();
    let mut checked = 0;
    for (name, entry) in exp.get("files").obj() {
        if !entry.get("byte_exact").bool() {
            continue;
        }
        let arrays: Vec<NDArray> = entry.get("arrays").arr().iter().map(build).collect();
        let names: Vec<&str> = entry.get("names").arr().iter().map(|n| n.str()).collect();
        let list: Vec<(Option<&str>, &NDArray)> = if names.is_empty() {
            arrays.iter().map(|a| (None, a)).collect()
        } else {
            names.iter().map(|n| Some(*n)).zip(arrays.iter()).collect()
        };
        let mut out = Vec::new();
        params::save_with(&mut out, &list, semantics(entry)).unwrap();
        let want = read_fixture(name);
        assert_eq!(hex(&out), hex(&want), "{name}: bytes differ from MXNet's");
        if semantics(entry) == ShapeSemantics::Legacy {
            assert_eq!(params::save_to_bytes(&list).unwrap(), want, "{name}");
        }
        // Through a file too.
        let tmp = std::env::temp_dir().join(format!("oxnet-params-{}-{name}", std::process::id()));
        params::save_file_with(&tmp, &list, semantics(entry)).unwrap();
        assert_eq!(std::fs::read(&tmp).unwrap(), want, "{name} via save_file_with");
        let _ = std::fs::remove_file(&tmp);
        checked += 1;
    }
    assert!(checked >= 7, "only {checked} byte-exact files");
    for (name, e) in exp.get("raw").obj() {
        let raw = params::save_raw_bytes_with(&build(e), semantics(e)).unwrap();
        assert_eq!(hex(&raw), hex(&read_fixture(name)), "{name}: pickle bytes differ");
    }
}

#[test]
fn loading_then_saving_reproduces_host_cpu0_files() {
    let exp = expected();
    for (name, entry) in exp.get("files").obj() {
        let all_cpu0 = entry.get("arrays").arr().iter().all(|e| e.get("saved_ctx").usizes() == [1, 0]);
        // Arrays saved from cpu(1) load onto cpu(0) (as in MXNet), so re-saving them
        // records cpu(0): that file is covered by the test above instead.
        if !entry.get("byte_exact").bool() || !all_cpu0 {
            continue;
        }
        let bytes = read_fixture(name);
        let (arrays, names) = params::load_from_bytes(&bytes).unwrap();
        let list: Vec<(Option<&str>, &NDArray)> = if names.is_empty() {
            arrays.iter().map(|a| (None, a)).collect()
        } else {
            names.iter().map(|n| Some(n.as_str())).zip(arrays.iter()).collect()
        };
        let mut out = Vec::new();
        params::save_with(&mut out, &list, semantics(entry)).unwrap();
        assert_eq!(out, bytes, "{name}: load + save changed the bytes");
    }
    // The cpu(1) file differs from its re-save exactly in the recorded dev_id.
    let bytes = read_fixture("cpu1.params");
    let (arrays, _) = params::load_from_bytes(&bytes).unwrap();
    assert!(arrays.iter().all(|a| a.ctx() == Context::cpu(0)));
    let out = params::save_to_bytes(&arrays.iter().map(|a| (None, a)).collect::<Vec<_>>()).unwrap();
    let diffs: Vec<usize> = (0..out.len()).filter(|&i| out[i] != bytes[i]).collect();
    assert_eq!(out.len(), bytes.len());
    assert_eq!(diffs.len(), 2, "one dev_id byte per array: {diffs:?}");
    assert!(diffs.iter().all(|&i| bytes[i] == 1 && out[i] == 0));
}

#[test]
fn sparse_fixtures_are_densified() {
    let (arrays, _) = params::load_file(fixture_dir().join("sparse.params")).unwrap();
    assert_eq!(arrays[0].to_vec::<f32>().unwrap(), vec![0., 0., 1., 2., 0., 0., 3., 4.]);
    assert_eq!(arrays[1].to_vec::<f32>().unwrap(), vec![0., 5., 0., 0., 0., 0., 7., 0., 8.]);
    assert_eq!(arrays[2].to_vec::<f32>().unwrap(), vec![0.; 6]);
    assert_eq!(arrays[3].to_vec::<f32>().unwrap(), vec![0.; 6]);
}

// ---------------------------------------------------------------------------------
// Fuzz: truncations and byte changes never panic; every failure is a clear error.

/// xorshift64* (deterministic, no dependencies).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn fuzzed_fixtures_never_panic() {
    let mut inputs: Vec<(String, bool, Vec<u8>)> = Vec::new();
    for entry in std::fs::read_dir(fixture_dir()).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".params") || name.ends_with(".bin") {
            inputs.push((name.clone(), name.ends_with(".bin"), std::fs::read(&p).unwrap()));
        }
    }
    inputs.sort();
    assert!(inputs.len() >= 14);
    // A small densify limit keeps fuzzed sparse headers from asking for gigabytes.
    let opts = LoadOptions { max_densify_bytes: 1 << 20 };
    let interesting: [i64; 9] = [0, 1, -1, 2, 7, 0x7FFF_FFFF, -0x8000_0000, i64::MAX, i64::MIN];
    // Deterministic by default; OXNET_PARAMS_FUZZ_SEED / _ITERS run other or longer
    // campaigns.
    let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let mut rng = Rng(env("OXNET_PARAMS_FUZZ_SEED", 0x9E37_79B9_7F4A_7C15).max(1));
    let (mut ok, mut err) = (0usize, 0usize);
    let iters = env("OXNET_PARAMS_FUZZ_ITERS", 100_000) as usize;
    for iter in 0..iters {
        let (name, raw, orig) = &inputs[rng.below(inputs.len())];
        let mut b = orig.clone();
        let mode = rng.below(4);
        let mut truncated = false;
        if mode == 0 || mode == 3 {
            let n = rng.below(b.len());
            b.truncate(n);
            truncated = true;
        }
        if mode == 1 || mode == 3 {
            for _ in 0..1 + rng.below(4) {
                if !b.is_empty() {
                    let i = rng.below(b.len());
                    b[i] ^= 1 + rng.below(255) as u8;
                }
            }
        }
        if mode == 2 && b.len() >= 8 {
            // Overwrite an aligned word (every field of the format is 4-aligned).
            let v = interesting[rng.below(interesting.len())];
            let wide = rng.below(2) == 0;
            let w = if wide { 8 } else { 4 };
            let i = rng.below((b.len() - w) / 4 + 1) * 4;
            if wide {
                b[i..i + 8].copy_from_slice(&v.to_le_bytes());
            } else {
                b[i..i + 4].copy_from_slice(&(v as i32).to_le_bytes());
            }
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if *raw {
                params::load_raw_bytes_detailed(&b, &opts).map(|_| ())
            } else {
                params::load_detailed(&b, &opts).map(|_| ())
            }
        }));
        match result {
            Err(_) => panic!("iteration {iter}: loading mutated {name} (mode {mode}) panicked; bytes {}", hex(&b)),
            Ok(Ok(())) => {
                // The format ends with a field that is always present, so no strict
                // prefix of an MXNet file can load.
                assert!(!(truncated && mode == 0), "iteration {iter}: truncated {name} to {} bytes loaded", b.len());
                ok += 1;
            }
            Ok(Err(e)) => {
                assert!(e.message().contains("corrupt or truncated"), "iteration {iter}: {name}: {e}");
                err += 1;
            }
        }
    }
    eprintln!("fuzz: {iters} mutated inputs, {ok} loaded, {err} rejected with an error");
    assert_eq!(ok + err, iters);
    assert!(ok > iters / 20 && err > iters / 4, "ok {ok}, err {err}");
}
