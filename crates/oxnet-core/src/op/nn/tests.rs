use crate::context::Context;
use crate::ndarray::NDArray;
use crate::op::{call, Value};

fn arr(shape: &[usize], v: &[f64]) -> NDArray {
    NDArray::from_vec(shape, v, Context::cpu(0)).unwrap()
}
fn vals(a: &NDArray) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}
fn close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}
fn s(v: &str) -> Value {
    Value::Str(v.into())
}

/// Numeric gradient of sum(op(x) * w) with respect to input `which`.
fn num_grad(f: &dyn Fn(&[NDArray]) -> NDArray, ins: &[NDArray], which: usize, w: &[f64]) -> Vec<f64> {
    let base: Vec<Vec<f64>> = ins.iter().map(vals).collect();
    let mut out = vec![0.0; base[which].len()];
    let h = 1e-6;
    for (j, o) in out.iter_mut().enumerate() {
        let val = |d: f64| {
            let mut v = base[which].clone();
            v[j] += d;
            let mut args = ins.to_vec();
            args[which] = arr(ins[which].shape(), &v);
            vals(&f(&args)).iter().zip(w).map(|(a, b)| a * b).sum::<f64>()
        };
        *o = (val(h) - val(-h)) / (2.0 * h);
    }
    out
}

#[test]
fn activation_grads_match_finite_differences() {
    let x = arr(&[2, 3], &[-1.5, -0.3, 0.2, 0.7, 1.9, -2.2]);
    let w = [0.3, -1.0, 0.5, 2.0, 1.0, -0.7];
    let g = arr(&[2, 3], &w);
    for act in ["relu", "sigmoid", "tanh", "softrelu", "softsign"] {
        let op = crate::op::lookup("Activation").unwrap();
        let p = op.parse(vec![("act_type".into(), s(act))]).unwrap();
        let y = crate::op::invoke(op, &[x.clone()], p.clone(), None, None).unwrap();
        let dx = super::activation::act_grad(&p, &[x.clone()], &y, &[g.clone()]).unwrap()[0].clone().unwrap();
        let f = |a: &[NDArray]| call("Activation", a, &[("act_type", s(act))]).unwrap().remove(0);
        close(&vals(&dx), &num_grad(&f, &[x.clone()], 0, &w), 1e-5);
    }
    for act in ["leaky", "elu", "selu", "gelu"] {
        let f = |a: &[NDArray]| call("LeakyReLU", a, &[("act_type", s(act)), ("slope", Value::Float(0.2))]).unwrap().remove(0);
        let op = crate::op::lookup("LeakyReLU").unwrap();
        let p = op.parse(vec![("act_type".into(), s(act)), ("slope".into(), Value::Float(0.2))]).unwrap();
        let y = crate::op::invoke(op, &[x.clone()], p.clone(), None, None).unwrap();
        let dx = super::activation::lrelu_grad(&p, &[x.clone()], &y, &[g.clone()]).unwrap()[0].clone().unwrap();
        close(&vals(&dx), &num_grad(&f, &[x.clone()], 0, &w), 1e-5);
    }
}

#[test]
fn batchnorm_training_updates_moving_stats_and_grads_match() {
    let xv: Vec<f64> = (0..24).map(|i| ((i * 7 % 11) as f64) * 0.3 - 1.0).collect();
    let x = arr(&[2, 3, 4], &xv);
    let gamma = arr(&[3], &[1.0, 2.0, 0.5]);
    let beta = arr(&[3], &[0.1, 0.2, 0.3]);
    let mm = arr(&[3], &[0.0; 3]);
    let mv = arr(&[3], &[1.0; 3]);
    let prev = crate::autograd::set_training(true);
    let attrs = [("fix_gamma", Value::Bool(false))];
    let out = call("BatchNorm", &[x.clone(), gamma.clone(), beta.clone(), mm.clone(), mv.clone()], &attrs).unwrap();
    // Channel 0's batch statistics.
    let c0: Vec<f64> = (0..24).filter(|i| (i / 4) % 3 == 0).map(|i| xv[i]).collect();
    let m0 = c0.iter().sum::<f64>() / 8.0;
    let v0 = c0.iter().map(|v| (v - m0) * (v - m0)).sum::<f64>() / 8.0;
    close(&vals(&out[1])[..1], &[m0], 1e-12);
    close(&vals(&out[2])[..1], &[1.0 / (v0 + 1e-3).sqrt()], 1e-12);
    // The forward leaves the moving statistics alone; the backward updates them.
    close(&vals(&mm), &[0.0; 3], 0.0);
    close(&vals(&mv), &[1.0; 3], 0.0);
    // Gradients against finite differences of the training-mode forward.
    let w: Vec<f64> = (0..24).map(|i| ((i * 5 % 7) as f64) - 3.0).collect();
    let op = crate::op::lookup("BatchNorm").unwrap();
    let p = op.parse(vec![("fix_gamma".into(), Value::Bool(false))]).unwrap();
    let grads =
        super::norm::bn_grad(&p, &[x.clone(), gamma.clone(), beta.clone(), mm.clone(), mv.clone()], &out, &[arr(&[2, 3, 4], &w)]).unwrap();
    close(&vals(&mm)[..1], &[0.1 * m0], 1e-12);
    close(&vals(&mv)[..1], &[0.9 + 0.1 * v0], 1e-9);
    let f = |a: &[NDArray]| {
        let aux = [arr(&[3], &[0.0; 3]), arr(&[3], &[1.0; 3])];
        call("BatchNorm", &[a[0].clone(), a[1].clone(), a[2].clone(), aux[0].clone(), aux[1].clone()], &attrs).unwrap().remove(0)
    };
    let ins = [x.clone(), gamma.clone(), beta.clone()];
    for (j, gr) in grads.iter().take(3).enumerate() {
        close(&vals(gr.as_ref().unwrap()), &num_grad(&f, &ins, j, &w), 1e-4);
    }
    assert!(grads[3].is_none() && grads[4].is_none());
    crate::autograd::set_training(prev);
}

#[test]
fn layer_and_instance_norm_grads_match() {
    let xv: Vec<f64> = (0..24).map(|i| ((i * 7 % 13) as f64) * 0.25 - 1.0).collect();
    let x = arr(&[2, 3, 4], &xv);
    let w: Vec<f64> = (0..24).map(|i| ((i * 5 % 7) as f64) - 3.0).collect();
    for axis in [-1i64, 1, 0] {
        let c = [2usize, 3, 4][axis.rem_euclid(3) as usize];
        let gamma = arr(&[c], &(0..c).map(|i| 1.0 + i as f64 * 0.3).collect::<Vec<_>>());
        let beta = arr(&[c], &(0..c).map(|i| i as f64 * 0.1).collect::<Vec<_>>());
        let attrs = [("axis", Value::Int(axis))];
        let f = |a: &[NDArray]| call("LayerNorm", a, &attrs).unwrap().remove(0);
        let ins = [x.clone(), gamma, beta];
        let out = call("LayerNorm", &ins, &attrs).unwrap();
        let p = crate::op::lookup("LayerNorm").unwrap().parse(vec![("axis".into(), Value::Int(axis))]).unwrap();
        let grads = super::norm::ln_grad(&p, &ins, &out, &[arr(&[2, 3, 4], &w)]).unwrap();
        for j in 0..3 {
            close(&vals(grads[j].as_ref().unwrap()), &num_grad(&f, &ins, j, &w), 1e-4);
        }
    }
    let x = arr(&[2, 3, 2, 2], &xv);
    let ins = [x, arr(&[3], &[1.0, 0.5, 2.0]), arr(&[3], &[0.0, 1.0, -1.0])];
    let f = |a: &[NDArray]| call("InstanceNorm", a, &[]).unwrap().remove(0);
    let out = call("InstanceNorm", &ins, &[]).unwrap();
    let p = crate::op::lookup("InstanceNorm").unwrap().parse(vec![]).unwrap();
    let grads = super::norm::in_grad(&p, &ins, &out, &[arr(&[2, 3, 2, 2], &w)]).unwrap();
    for j in 0..3 {
        close(&vals(grads[j].as_ref().unwrap()), &num_grad(&f, &ins, j, &w), 1e-4);
    }
}

#[test]
fn softmax_output_gradient_ignores_head() {
    let x = arr(&[2, 3], &[1.0, 2.0, 3.0, 0.5, 0.5, -1.0]);
    let l = arr(&[2], &[2.0, 0.0]);
    let y = call("SoftmaxOutput", &[x.clone(), l.clone()], &[]).unwrap();
    let p = crate::op::lookup("SoftmaxOutput").unwrap().parse(vec![("grad_scale".into(), Value::Float(2.0))]).unwrap();
    let g = super::output::smo_grad(&p, &[x, l], &y, &[arr(&[2, 3], &[9.0; 6])]).unwrap();
    let yv = vals(&y[0]);
    let want: Vec<f64> = yv.iter().enumerate().map(|(i, v)| 2.0 * (v - if i == 2 || i == 3 { 1.0 } else { 0.0 })).collect();
    close(&vals(g[0].as_ref().unwrap()), &want, 1e-12);
    assert!(g[1].is_none());
}

#[test]
fn fill_infers_parameter_shapes() {
    let bn = crate::op::lookup("BatchNorm").unwrap();
    let p = bn.parse(vec![]).unwrap();
    let mut shapes = vec![Some(crate::shape::Shape::from_slice(&[2, 5, 3])), None, None, None, None];
    (bn.fill.unwrap())(&p, &mut shapes).unwrap();
    assert!(shapes[1..].iter().all(|s| s.as_deref() == Some(&[5usize][..])));
    shapes[2] = Some(crate::shape::Shape::from_slice(&[4]));
    assert!((bn.fill.unwrap())(&p, &mut shapes).is_err());
    let e = crate::op::lookup("Embedding").unwrap();
    let p = e.parse(vec![("input_dim".into(), Value::Int(7)), ("output_dim".into(), Value::Int(3))]).unwrap();
    let mut shapes = vec![None, None];
    (e.fill.unwrap())(&p, &mut shapes).unwrap();
    assert_eq!(shapes[1].as_deref(), Some(&[7usize, 3][..]));
    let so = crate::op::lookup("SoftmaxOutput").unwrap();
    let p = so.parse(vec![("multi_output".into(), Value::Bool(true))]).unwrap();
    let mut shapes = vec![Some(crate::shape::Shape::from_slice(&[4, 5, 6])), None];
    (so.fill.unwrap())(&p, &mut shapes).unwrap();
    assert_eq!(shapes[1].as_deref(), Some(&[4usize, 6][..]));
}
