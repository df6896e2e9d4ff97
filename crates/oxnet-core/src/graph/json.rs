//! A small JSON reader (values) and the writer that lays symbol JSON out exactly as
//! MXNet 1.9.1 does (dmlc's JSON writer: two-space indents, `", "` separators,
//! maps of more than one entry and integer arrays of more than ten items on
//! several lines).

use crate::error::{Error, Result};

/// A parsed JSON value. Objects keep their key order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn as_arr(&self) -> Option<&[Json]> {
        match self {
            Json::Arr(a) => Some(a),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_usize(&self) -> Option<usize> {
        match self {
            Json::Num(n) if *n >= 0.0 && n.fract() == 0.0 => Some(*n as usize),
            _ => None,
        }
    }
}

fn err(pos: usize, what: &str) -> Error {
    Error::new(format!("malformed symbol JSON at byte {pos}: {what}"))
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\n' | b'\r' | b'\t') {
            self.i += 1;
        }
    }
    fn value(&mut self) -> Result<Json> {
        self.ws();
        if self.depth > 512 {
            return Err(err(self.i, "nesting too deep"));
        }
        let Some(&c) = self.s.get(self.i) else { return Err(err(self.i, "unexpected end of input")) };
        match c {
            b'{' => {
                self.i += 1;
                self.depth += 1;
                let mut kv = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(Json::Obj(kv));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(err(self.i, "expected a string key"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.s.get(self.i) != Some(&b':') {
                        return Err(err(self.i, "expected ':'"));
                    }
                    self.i += 1;
                    let v = self.value()?;
                    kv.push((k, v));
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            self.depth -= 1;
                            return Ok(Json::Obj(kv));
                        }
                        _ => return Err(err(self.i, "expected ',' or '}'")),
                    }
                }
            }
            b'[' => {
                self.i += 1;
                self.depth += 1;
                let mut a = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(Json::Arr(a));
                }
                loop {
                    a.push(self.value()?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            self.depth -= 1;
                            return Ok(Json::Arr(a));
                        }
                        _ => return Err(err(self.i, "expected ',' or ']'")),
                    }
                }
            }
            b'"' => Ok(Json::Str(self.string()?)),
            b't' if self.s[self.i..].starts_with(b"true") => {
                self.i += 4;
                Ok(Json::Bool(true))
            }
            b'f' if self.s[self.i..].starts_with(b"false") => {
                self.i += 5;
                Ok(Json::Bool(false))
            }
            b'n' if self.s[self.i..].starts_with(b"null") => {
                self.i += 4;
                Ok(Json::Null)
            }
            b'-' | b'0'..=b'9' => {
                let st = self.i;
                while self.i < self.s.len() && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    self.i += 1;
                }
                let t = std::str::from_utf8(&self.s[st..self.i]).map_err(|_| err(st, "bad number"))?;
                t.parse::<f64>().map(Json::Num).map_err(|_| err(st, "bad number"))
            }
            _ => Err(err(self.i, "unexpected character")),
        }
    }
    fn string(&mut self) -> Result<String> {
        self.i += 1; // opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.i) else { return Err(err(self.i, "unterminated string")) };
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.s.get(self.i) else { return Err(err(self.i, "unterminated escape")) };
                    self.i += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let h = self.s.get(self.i..self.i + 4).ok_or_else(|| err(self.i, "short \\u escape"))?;
                            let h = std::str::from_utf8(h).map_err(|_| err(self.i, "bad \\u escape"))?;
                            let cp = u32::from_str_radix(h, 16).map_err(|_| err(self.i, "bad \\u escape"))?;
                            self.i += 4;
                            let ch = char::from_u32(cp).unwrap_or('\u{fffd}');
                            let mut b = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                        }
                        _ => return Err(err(self.i - 1, "bad escape")),
                    }
                }
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| err(self.i, "string is not UTF-8"))
    }
}

/// Parses a JSON document.
pub fn parse(text: &str) -> Result<Json> {
    let mut p = Parser { s: text.as_bytes(), i: 0, depth: 0 };
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(err(p.i, "trailing characters after the JSON value"));
    }
    Ok(v)
}

/// A JSON string literal as dmlc writes it.
pub fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// The writer: nested scopes, each one line or several.
pub struct Writer {
    pub out: String,
    scopes: Vec<(bool, usize)>, // (multi_line, items written)
}

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}

impl Writer {
    pub fn new() -> Self {
        Writer { out: String::new(), scopes: Vec::new() }
    }
    fn newline(&mut self) {
        self.out.push('\n');
        for _ in 0..self.scopes.len() {
            self.out.push_str("  ");
        }
    }
    fn sep(&mut self) {
        if let Some((ml, n)) = self.scopes.last_mut() {
            let (ml, first) = (*ml, *n == 0);
            *n += 1;
            if !first {
                self.out.push_str(", ");
            }
            if ml {
                self.newline();
            }
        }
    }
    pub fn begin_obj(&mut self, multi: bool) {
        self.out.push('{');
        self.scopes.push((multi, 0));
    }
    pub fn end_obj(&mut self) {
        let (ml, n) = self.scopes.pop().unwrap_or((false, 0));
        if ml && n > 0 {
            self.newline();
        }
        self.out.push('}');
    }
    pub fn begin_arr(&mut self, multi: bool) {
        self.out.push('[');
        self.scopes.push((multi, 0));
    }
    pub fn end_arr(&mut self) {
        self.end_obj_like(']');
    }
    fn end_obj_like(&mut self, c: char) {
        let (ml, n) = self.scopes.pop().unwrap_or((false, 0));
        if ml && n > 0 {
            self.newline();
        }
        self.out.push(c);
    }
    /// Starts the value of `key` in the current object.
    pub fn key(&mut self, key: &str) {
        self.sep();
        self.out.push_str(&quote(key));
        self.out.push_str(": ");
    }
    /// Starts the next item of the current array.
    pub fn item(&mut self) {
        self.sep();
    }
    pub fn raw(&mut self, s: &str) {
        self.out.push_str(s);
    }
    pub fn str_map(&mut self, kv: &[(String, String)]) {
        self.begin_obj(kv.len() > 1);
        for (k, v) in kv {
            self.key(k);
            self.raw(&quote(v));
        }
        self.end_obj();
    }
    pub fn int_arr(&mut self, v: &[usize]) {
        self.begin_arr(v.len() > 10);
        for x in v {
            self.item();
            self.raw(&x.to_string());
        }
        self.end_arr();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_quote() {
        let v = parse(r#"{"a": [1, 2.5, "x\"y\\n"], "b": {"c": null, "d": true}}"#).unwrap();
        assert_eq!(v.get("a").unwrap().as_arr().unwrap()[0].as_usize(), Some(1));
        assert_eq!(v.get("a").unwrap().as_arr().unwrap()[2].as_str(), Some("x\"y\\n"));
        assert_eq!(quote("[\"zero\", {}]"), r#""[\"zero\", {}]""#);
        for bad in ["", "{", "[1,", "{\"a\" 1}", "[1] x", "\"abc", "{\"a\":}"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn writer_layout() {
        let mut w = Writer::new();
        w.begin_obj(true);
        w.key("a");
        w.int_arr(&[0, 1]);
        w.key("m");
        w.str_map(&[("k".into(), "v".into())]);
        w.end_obj();
        assert_eq!(w.out, "{\n  \"a\": [0, 1], \n  \"m\": {\"k\": \"v\"}\n}");
    }
}
