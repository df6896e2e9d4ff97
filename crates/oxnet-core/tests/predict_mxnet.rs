//! A model exported by MXNet 1.9.1 (data/mxnet-models, made by make_fixture.py)
//! runs through the Rust predictor with MXNet's outputs.

use std::collections::HashMap;
use std::path::PathBuf;

use oxnet_core::io::params;
use oxnet_core::predict::Predictor;
use oxnet_core::{Context, NDArray};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/mxnet-models/mobilenet0.25").join(name)
}

fn load(name: &str) -> HashMap<String, NDArray> {
    let (arrays, names) = params::load_file(fixture(name)).unwrap();
    names.into_iter().zip(arrays).collect()
}

#[test]
fn mobilenet_matches_mxnet() {
    let x = &load("input.params")["data"];
    let want = load("expected.params")["out"].to_vec::<f32>().unwrap();
    let ctx = Context::cpu(0);
    let mut p = Predictor::load(fixture("model-symbol.json"), fixture("model-0000.params"), &[("data", &[1, 3, 224, 224])], ctx).unwrap();
    for _ in 0..2 {
        let got = p.forward(&[("data", x)]).unwrap()[0].to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len());
        let diff = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(diff <= 1e-4, "max abs diff {diff}");
    }
}

#[test]
fn wrong_input_shape_and_truncated_params_are_errors() {
    let ctx = Context::cpu(0);
    // A 3-d input cannot go through a 2-d convolution: an error naming the layer.
    let e = Predictor::load(fixture("model-symbol.json"), fixture("model-0000.params"), &[("data", &[1, 3, 224])], ctx)
        .err()
        .expect("3-d input must fail");
    assert!(e.message().contains("Convolution"), "{}", e.message());
    let bytes = std::fs::read(fixture("model-0000.params")).unwrap();
    let dir = std::env::temp_dir().join(format!("oxnet-predict-trunc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for cut in [0usize, 7, 100, bytes.len() / 2, bytes.len() - 1] {
        let f = dir.join("t.params");
        std::fs::write(&f, &bytes[..cut]).unwrap();
        let e = Predictor::load(fixture("model-symbol.json"), &f, &[("data", &[1, 3, 224, 224])], ctx)
            .err()
            .expect("truncated params must fail");
        assert!(e.message().contains("t.params"), "{}", e.message());
    }
    std::fs::remove_dir_all(&dir).ok();
}
