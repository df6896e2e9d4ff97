//! Typed operator parameters. Each op declares a list of [`ParamSpec`]s; values
//! arrive either as MXNet-style strings (symbol JSON, `attr` dicts) or as typed
//! values from Python, and both are checked and converted against the spec here.

use crate::context::{Context, DeviceType};
use crate::dtype::DType;
use crate::error::{Error, Result};

/// A parameter value, after conversion to its declared type.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Tuple(Vec<i64>),
    Str(String),
    DType(DType),
    Ctx(Context),
    /// The subgraphs of a control-flow node (`_foreach`, `_while_loop`, `_cond`);
    /// set by the graph layer, never parsed from a string.
    Subgraphs(super::control_flow::Subgraphs),
}

/// The declared type of a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PType {
    Int,
    Float,
    Bool,
    /// A tuple of ints (a shape); a single int is taken as a 1-tuple.
    Tuple,
    /// An int or None.
    OptInt,
    /// A float or None.
    OptFloat,
    /// An int, a tuple of ints, or None (axis arguments).
    OptTuple,
    /// A tuple whose items may be None (slice begin/end/step).
    OptIntTuple,
    Str,
    DType,
    OptDType,
    Ctx,
    /// A tuple of floats (`sizes=(0.5, 0.25)`); a single number is a 1-tuple.
    /// Stored as its normalised string `(0.5, 0.25)`; read with [`Params::floats`].
    FloatTuple,
}

impl PType {
    fn describe(self) -> &'static str {
        match self {
            PType::Int => "int",
            PType::Float => "float",
            PType::Bool => "boolean",
            PType::Tuple => "Shape(tuple)",
            PType::OptInt => "int or None",
            PType::OptFloat => "float or None",
            PType::OptTuple => "int or Shape(tuple) or None",
            PType::OptIntTuple => "Shape(tuple) of int or None",
            PType::Str => "string",
            PType::DType => "dtype",
            PType::OptDType => "dtype or None",
            PType::Ctx => "Context",
            PType::FloatTuple => "tuple of <float>",
        }
    }
}

/// One declared parameter: name, type, default (as an MXNet-style string; `None`
/// means required), allowed values for string enums, and its documentation.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub ty: PType,
    pub default: Option<&'static str>,
    pub choices: &'static [&'static str],
    pub doc: &'static str,
}

impl ParamSpec {
    pub const fn new(name: &'static str, ty: PType, default: Option<&'static str>, doc: &'static str) -> Self {
        ParamSpec { name, ty, default, choices: &[], doc }
    }
    pub const fn choice(name: &'static str, choices: &'static [&'static str], default: Option<&'static str>, doc: &'static str) -> Self {
        ParamSpec { name, ty: PType::Str, default, choices, doc }
    }
    /// The type line of MXNet-style docs, e.g. `int or None, optional, default='None'`.
    pub fn type_doc(&self) -> String {
        let ty = if self.choices.is_empty() {
            self.ty.describe().to_string()
        } else {
            format!("{{{}}}", self.choices.iter().map(|c| format!("'{c}'")).collect::<Vec<_>>().join(", "))
        };
        match self.default {
            Some(d) => format!("{ty}, optional, default='{d}'"),
            None => format!("{ty}, required"),
        }
    }
}

/// Parsed parameters of one op call, one value per declared parameter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    vals: Vec<(&'static str, Value)>,
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim() {
        "True" | "true" | "1" => Some(true),
        "False" | "false" | "0" => Some(false),
        _ => None,
    }
}

/// A float that is a whole number within i64's range, as that integer (`1e30` or
/// `2.5` given for an int parameter is an error, not a saturated or truncated value).
fn whole(f: f64) -> Option<i64> {
    (f.fract() == 0.0 && (-9.223372036854775808e18..9.223372036854775808e18).contains(&f)).then_some(f as i64)
}

fn parse_tuple_items(s: &str) -> Option<Vec<Option<i64>>> {
    let t = s.trim();
    let inner = if (t.starts_with('(') && t.ends_with(')')) || (t.starts_with('[') && t.ends_with(']')) { &t[1..t.len() - 1] } else { t };
    let mut out = Vec::new();
    for item in inner.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        if item == "None" {
            out.push(None);
        } else {
            let item = item.trim_end_matches('L');
            out.push(Some(item.parse::<i64>().ok().or_else(|| {
                whole(item.parse::<f64>().ok()?)
            })?));
        }
    }
    Some(out)
}

pub fn parse_ctx(s: &str) -> Option<Context> {
    let s = s.trim();
    let open = s.find('(')?;
    let ty = match &s[..open] {
        "cpu" => DeviceType::Cpu,
        "gpu" => DeviceType::Gpu,
        "cpu_pinned" => DeviceType::CpuPinned,
        "cpu_shared" => DeviceType::CpuShared,
        _ => return None,
    };
    let id = s[open + 1..].trim_end_matches(')').trim().parse().ok()?;
    Some(Context { dev_type: ty, dev_id: id })
}

/// The items of a float tuple written `(a, b)`, `[a, b]` or `a`; None when an item
/// is not a number.
pub fn parse_float_items(s: &str) -> Option<Vec<f64>> {
    let t = s.trim();
    let inner = if (t.starts_with('(') && t.ends_with(')')) || (t.starts_with('[') && t.ends_with(']')) { &t[1..t.len() - 1] } else { t };
    inner.split(',').map(str::trim).filter(|i| !i.is_empty()).map(|i| i.trim_end_matches('L').parse::<f64>().ok()).collect()
}

fn float_tuple_string(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|f| format_float(*f)).collect();
    if items.len() == 1 {
        format!("({},)", items[0])
    } else {
        format!("({})", items.join(", "))
    }
}

/// Converts a value (typed, or a string to parse) to the declared type.
fn coerce(spec: &ParamSpec, v: Value) -> std::result::Result<Value, ()> {
    use PType::*;
    if spec.ty == FloatTuple {
        let items = match v {
            Value::Str(s) => parse_float_items(&s).ok_or(())?,
            Value::Tuple(t) if !t.contains(&i64::MIN) => t.iter().map(|&x| x as f64).collect(),
            Value::Int(i) => vec![i as f64],
            Value::Float(f) => vec![f],
            _ => return Err(()),
        };
        return Ok(Value::Str(float_tuple_string(&items)));
    }
    if let Value::Str(s) = &v {
        let s = s.trim();
        if spec.ty == Str {
            if !spec.choices.is_empty() && !spec.choices.contains(&s) {
                return Err(());
            }
            return Ok(Value::Str(s.to_string()));
        }
        if s == "None" {
            return match spec.ty {
                OptInt | OptFloat | OptTuple | OptDType => Ok(Value::None),
                _ => Err(()),
            };
        }
        return match spec.ty {
            Int | OptInt => s.parse::<i64>().map(Value::Int).or_else(|_| s.parse::<f64>().ok().and_then(whole).map(Value::Int).ok_or(())),
            Float | OptFloat => match s {
                "inf" | "Inf" => Ok(Value::Float(f64::INFINITY)),
                "-inf" | "-Inf" => Ok(Value::Float(f64::NEG_INFINITY)),
                "nan" | "NaN" => Ok(Value::Float(f64::NAN)),
                _ => s.parse::<f64>().map(Value::Float).map_err(|_| ()),
            },
            Bool => parse_bool(s).map(Value::Bool).ok_or(()),
            Tuple | OptTuple => {
                let items = parse_tuple_items(s).ok_or(())?;
                items.into_iter().collect::<Option<Vec<i64>>>().map(Value::Tuple).ok_or(())
            }
            OptIntTuple => {
                let items = parse_tuple_items(s).ok_or(())?;
                // None items are stored as i64::MIN.
                Ok(Value::Tuple(items.into_iter().map(|x| x.unwrap_or(i64::MIN)).collect()))
            }
            DType | OptDType => crate::dtype::DType::from_name(s).map(Value::DType).map_err(|_| ()),
            Ctx => parse_ctx(s).map(Value::Ctx).ok_or(()),
            Str | FloatTuple => unreachable!(),
        };
    }
    match (spec.ty, v) {
        (OptInt | OptFloat | OptTuple | OptDType, Value::None) => Ok(Value::None),
        // String enums that list None (e.g. `layout`) take Python's None.
        (Str, Value::None) if spec.choices.contains(&"None") => Ok(Value::Str("None".into())),
        (Int | OptInt, Value::Int(i)) => Ok(Value::Int(i)),
        (Int | OptInt, Value::Bool(b)) => Ok(Value::Int(b as i64)),
        (Int | OptInt, Value::Float(f)) => whole(f).map(Value::Int).ok_or(()),
        (Float | OptFloat, Value::Float(f)) => Ok(Value::Float(f)),
        (Float | OptFloat, Value::Int(i)) => Ok(Value::Float(i as f64)),
        (Float | OptFloat, Value::Bool(b)) => Ok(Value::Float(b as i64 as f64)),
        (Bool, Value::Bool(b)) => Ok(Value::Bool(b)),
        (Bool, Value::Int(i)) if i == 0 || i == 1 => Ok(Value::Bool(i != 0)),
        (Tuple | OptTuple | OptIntTuple, Value::Tuple(t)) => Ok(Value::Tuple(t)),
        (Tuple | OptTuple | OptIntTuple, Value::Int(i)) => Ok(Value::Tuple(vec![i])),
        (DType | OptDType, Value::DType(d)) => Ok(Value::DType(d)),
        (Ctx, Value::Ctx(c)) => Ok(Value::Ctx(c)),
        _ => Err(()),
    }
}

/// A `'static` copy of a name, made once per distinct name (parameter names of
/// open ops, input names of custom ops).
pub fn intern(name: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut g = NAMES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = g.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    g.insert(leaked);
    leaked
}

impl Params {
    /// Like [`Params::parse`], but names not in `specs` are kept as they are (strings
    /// stay strings): the free keyword arguments of `Custom`.
    pub fn parse_open(op: &str, specs: &[ParamSpec], given: Vec<(String, Value)>) -> Result<Params> {
        let (known, extra): (Vec<_>, Vec<_>) = given.into_iter().partition(|(n, _)| specs.iter().any(|s| s.name == n));
        let mut p = Params::parse(op, specs, known)?;
        for (n, v) in extra {
            p.vals.push((intern(&n), v));
        }
        Ok(p)
    }

    /// Every (name, value), the declared parameters first.
    pub fn iter(&self) -> impl Iterator<Item = &(&'static str, Value)> {
        self.vals.iter()
    }

    /// Builds parameters for `op` from `(name, value)` pairs: unknown names, values
    /// of the wrong type and missing required parameters are errors naming the op.
    pub fn parse(op: &str, specs: &[ParamSpec], given: Vec<(String, Value)>) -> Result<Params> {
        let mut slots: Vec<Option<Value>> = vec![None; specs.len()];
        for (name, v) in given {
            let Some(i) = specs.iter().position(|s| s.name == name) else {
                // As MXNet 1.9.1: an op without a parameter struct ignores extra
                // keyword arguments (`broadcast_mul(a, b, axis=1)` runs there).
                if specs.is_empty() {
                    continue;
                }
                let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
                return Err(Error::op(
                    op,
                    format!(
                        "Cannot find argument '{name}', Possible Arguments: {}",
                        if names.is_empty() { "(none)".to_string() } else { names.join(", ") }
                    ),
                ));
            };
            let spec = &specs[i];
            let shown = format!("{v:?}");
            let val = coerce(spec, v).map_err(|_| {
                Error::op(
                    op,
                    format!("Invalid Parameter format for {} expect {} but value='{}'", spec.name, spec.type_doc(), show_value(&shown)),
                )
            })?;
            slots[i] = Some(val);
        }
        let mut vals = Vec::with_capacity(specs.len());
        for (spec, slot) in specs.iter().zip(slots) {
            let v = match slot {
                Some(v) => v,
                None => match spec.default {
                    Some(d) => coerce(spec, Value::Str(d.to_string()))
                        .map_err(|_| Error::op(op, format!("bad default for parameter {}", spec.name)))?,
                    None => return Err(Error::op(op, format!("Required parameter {} of {} is not presented", spec.name, spec.type_doc()))),
                },
            };
            vals.push((spec.name, v));
        }
        Ok(Params { vals })
    }

    /// Adds (or replaces) a value that is not a declared parameter (a control-flow
    /// node's subgraphs).
    pub fn set_extra(&mut self, name: &'static str, v: Value) {
        match self.vals.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = v,
            None => self.vals.push((name, v)),
        }
    }

    /// Parameters built directly by trusted Rust code (already typed).
    pub fn from_values(vals: Vec<(&'static str, Value)>) -> Params {
        Params { vals }
    }

    pub fn get(&self, name: &str) -> &Value {
        self.vals.iter().find(|(n, _)| *n == name).map(|(_, v)| v).unwrap_or(&Value::None)
    }
    pub fn int(&self, name: &str) -> i64 {
        match self.get(name) {
            Value::Int(i) => *i,
            Value::Bool(b) => *b as i64,
            Value::Float(f) => *f as i64,
            _ => 0,
        }
    }
    pub fn opt_int(&self, name: &str) -> Option<i64> {
        match self.get(name) {
            Value::None => None,
            _ => Some(self.int(name)),
        }
    }
    pub fn float(&self, name: &str) -> f64 {
        match self.get(name) {
            Value::Float(f) => *f,
            Value::Int(i) => *i as f64,
            _ => 0.0,
        }
    }
    pub fn opt_float(&self, name: &str) -> Option<f64> {
        match self.get(name) {
            Value::None => None,
            _ => Some(self.float(name)),
        }
    }
    pub fn bool(&self, name: &str) -> bool {
        matches!(self.get(name), Value::Bool(true))
    }
    pub fn tuple(&self, name: &str) -> Vec<i64> {
        match self.get(name) {
            Value::Tuple(t) => t.clone(),
            Value::Int(i) => vec![*i],
            _ => vec![],
        }
    }
    pub fn opt_tuple(&self, name: &str) -> Option<Vec<i64>> {
        match self.get(name) {
            Value::None => None,
            _ => Some(self.tuple(name)),
        }
    }
    /// A [`PType::FloatTuple`] parameter's items.
    pub fn floats(&self, name: &str) -> Vec<f64> {
        match self.get(name) {
            Value::Str(s) => parse_float_items(s).unwrap_or_default(),
            Value::Tuple(t) => t.iter().map(|&x| x as f64).collect(),
            Value::Float(f) => vec![*f],
            Value::Int(i) => vec![*i as f64],
            _ => vec![],
        }
    }
    pub fn str(&self, name: &str) -> &str {
        match self.get(name) {
            Value::Str(s) => s,
            _ => "",
        }
    }
    pub fn dtype(&self, name: &str) -> Option<DType> {
        match self.get(name) {
            Value::DType(d) => Some(*d),
            _ => None,
        }
    }
    pub fn ctx(&self, name: &str) -> Option<Context> {
        match self.get(name) {
            Value::Ctx(c) => Some(*c),
            _ => None,
        }
    }
    /// Every parameter as an MXNet-style string (for symbol JSON and docs).
    pub fn to_strings(&self) -> Vec<(&'static str, String)> {
        self.vals.iter().filter(|(_, v)| !matches!(v, Value::Subgraphs(_))).map(|(n, v)| (*n, value_to_string(v))).collect()
    }
}

fn show_value(debug: &str) -> String {
    debug.to_string()
}

/// MXNet's string form of a value: `(2, 3)`, `True`, `None`, `float32`, `cpu(0)`.
pub fn value_to_string(v: &Value) -> String {
    match v {
        Value::None => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format_float(*f),
        Value::Tuple(t) => {
            let items: Vec<String> = t.iter().map(|x| if *x == i64::MIN { "None".to_string() } else { x.to_string() }).collect();
            if items.len() == 1 {
                format!("({},)", items[0])
            } else {
                format!("({})", items.join(", "))
            }
        }
        Value::Str(s) => s.clone(),
        Value::DType(d) => d.name().into(),
        Value::Ctx(c) => c.to_string(),
        Value::Subgraphs(g) => format!("{g:?}"),
    }
}

fn format_float(f: f64) -> String {
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f.fract() == 0.0 && f.abs() < 1e16 {
        format!("{f:.1}")
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const SPECS: &[ParamSpec] = &[
        ParamSpec::new("axis", PType::OptTuple, Some("None"), ""),
        ParamSpec::new("keepdims", PType::Bool, Some("False"), ""),
        ParamSpec::new("shape", PType::Tuple, None, ""),
    ];
    #[test]
    fn strings_and_values() {
        let p = Params::parse("t", SPECS, vec![("axis".into(), Value::Str("(0, 1)".into())), ("shape".into(), Value::Str("[2,3]".into()))])
            .unwrap();
        assert_eq!(p.opt_tuple("axis"), Some(vec![0, 1]));
        assert!(!p.bool("keepdims"));
        assert_eq!(p.tuple("shape"), vec![2, 3]);
        let e = Params::parse("t", SPECS, vec![("bogus".into(), Value::Int(1))]).unwrap_err();
        assert!(e.message().contains("bogus") && e.message().contains("operator t"));
        let e = Params::parse("t", SPECS, vec![]).unwrap_err();
        assert!(e.message().contains("shape"));
        let e = Params::parse("t", SPECS, vec![("shape".into(), Value::Str("(a,b)".into()))]).unwrap_err();
        assert!(e.message().contains("Invalid Parameter"));
    }
}
