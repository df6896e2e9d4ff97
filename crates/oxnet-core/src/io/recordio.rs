//! MXNet's RecordIO format (dmlc-core's `recordio`), byte-compatible both ways.
//!
//! A file is a sequence of parts. Each part is the magic word `0xced7230a`
//! (little-endian), a word `lrec = cflag << 29 | length`, `length` payload bytes and
//! zero padding to a multiple of 4. `cflag` is 0 for a whole record, and 1/2/3 for
//! the first/middle/last part of a record split where its payload held the magic word
//! at a 4-byte-aligned offset (the writer drops the magic there and the reader puts it
//! back between parts). The image header (`IRHeader`: flag u32, label f32, id u64,
//! id2 u64, then `flag` float32 labels when `flag > 0`) is [`pack_header`] /
//! [`unpack_header`].
//!
//! Owns: the record framing and the header. Must not touch: image decoding
//! (see `io::image`) or anything of the engine.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

/// The magic word that opens every part.
pub const MAGIC: u32 = 0xced7_230a;
/// Largest payload of one part (29 bits of length).
pub const MAX_PART: usize = (1 << 29) - 1;

fn encode_lrec(cflag: u32, len: u32) -> u32 {
    (cflag << 29) | len
}

/// Frames `payload` as one record (splitting it where it holds the magic word) and
/// appends the bytes to `out`.
pub fn frame_record(payload: &[u8], out: &mut Vec<u8>) -> Result<()> {
    if payload.len() > MAX_PART {
        return Err(Error::new(format!("RecordIO accepts records of less than 2^29 bytes, got {}", payload.len())));
    }
    let magic = MAGIC.to_le_bytes();
    let len = payload.len();
    let lower = len & !3;
    let mut dptr = 0usize;
    let mut i = 0usize;
    while i < lower {
        if payload[i..i + 4] == magic {
            let flag = if dptr == 0 { 1 } else { 2 };
            out.extend_from_slice(&magic);
            out.extend_from_slice(&encode_lrec(flag, (i - dptr) as u32).to_le_bytes());
            out.extend_from_slice(&payload[dptr..i]);
            dptr = i + 4;
        }
        i += 4;
    }
    let flag = if dptr != 0 { 3 } else { 0 };
    out.extend_from_slice(&magic);
    out.extend_from_slice(&encode_lrec(flag, (len - dptr) as u32).to_le_bytes());
    out.extend_from_slice(&payload[dptr..]);
    let pad = (4 - len % 4) % 4;
    out.extend(std::iter::repeat_n(0u8, pad));
    Ok(())
}

/// Reads one record from `r` at byte offset `pos` (for messages; updated as bytes
/// are consumed). `Ok(None)` at a clean end of file.
pub fn read_record<R: Read>(r: &mut R, pos: &mut u64, name: &str) -> Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let start = *pos;
    let mut first = true;
    loop {
        let mut head = [0u8; 8];
        let n = read_full(r, &mut head).map_err(|e| Error::new(format!("RecordIO {name}: read error at byte {pos}: {e}")))?;
        if n == 0 && first {
            return Ok(None);
        }
        if n != 8 {
            return Err(Error::new(format!(
                "Invalid RecordIO File {name}: truncated record header at byte {} (record starting at byte {start})",
                *pos
            )));
        }
        let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        if magic != MAGIC {
            return Err(Error::new(format!(
                "Invalid RecordIO File {name}: wrong magic number 0x{magic:08x} at byte {} (expected 0x{MAGIC:08x})",
                *pos
            )));
        }
        let lrec = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let cflag = lrec >> 29;
        let len = (lrec & ((1 << 29) - 1)) as usize;
        let valid = if first { cflag == 0 || cflag == 1 } else { cflag == 2 || cflag == 3 };
        if !valid {
            return Err(Error::new(format!(
                "Invalid RecordIO File {name}: unexpected continuation flag {cflag} at byte {} (record starting at byte {start})",
                *pos
            )));
        }
        *pos += 8;
        let padded = (len + 3) & !3;
        let base = out.len();
        out.resize(base + padded, 0);
        let got = read_full(r, &mut out[base..]).map_err(|e| Error::new(format!("RecordIO {name}: read error at byte {pos}: {e}")))?;
        if got != padded {
            return Err(Error::new(format!(
                "Invalid RecordIO File {name}: record starting at byte {start} is truncated ({got} of {padded} bytes at byte {})",
                *pos
            )));
        }
        *pos += padded as u64;
        out.truncate(base + len);
        if cflag == 0 || cflag == 3 {
            return Ok(Some(out));
        }
        out.extend_from_slice(&MAGIC.to_le_bytes());
        first = false;
    }
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Every record of an in-memory RecordIO buffer.
pub fn read_all(bytes: &[u8], name: &str) -> Result<Vec<Vec<u8>>> {
    let mut cur = std::io::Cursor::new(bytes);
    let mut pos = 0u64;
    let mut out = Vec::new();
    while let Some(rec) = read_record(&mut cur, &mut pos, name)? {
        out.push(rec);
    }
    Ok(out)
}

/// A RecordIO file open for reading: sequential [`Reader::read`], random access by
/// [`Reader::seek`] to an offset from the `.idx` file.
pub struct Reader {
    name: String,
    file: BufReader<File>,
    pos: u64,
    len: u64,
}

impl Reader {
    pub fn open(path: &str) -> Result<Reader> {
        let f = File::open(path).map_err(|e| Error::new(format!("cannot open RecordIO file {path} for reading: {e}")))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(Reader { name: path.to_string(), file: BufReader::with_capacity(1 << 16, f), pos: 0, len })
    }
    /// The next record, `None` at the end of the file.
    pub fn read(&mut self) -> Result<Option<Vec<u8>>> {
        read_record(&mut self.file, &mut self.pos, &self.name)
    }
    pub fn tell(&self) -> u64 {
        self.pos
    }
    /// Moves to byte offset `pos` (a record's start, as the `.idx` file gives).
    pub fn seek(&mut self, pos: u64) -> Result<()> {
        if pos > self.len {
            return Err(Error::new(format!("RecordIO {}: offset {pos} is past the end of the file ({} bytes)", self.name, self.len)));
        }
        self.file.seek(SeekFrom::Start(pos)).map_err(|e| Error::new(format!("RecordIO {}: cannot seek to {pos}: {e}", self.name)))?;
        self.pos = pos;
        Ok(())
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn file_len(&self) -> u64 {
        self.len
    }
}

/// A RecordIO file open for writing (truncated on open, as MXNet's `'w'`).
pub struct Writer {
    name: String,
    file: BufWriter<File>,
    pos: u64,
    buf: Vec<u8>,
}

impl Writer {
    pub fn create(path: &str) -> Result<Writer> {
        let f = File::create(path).map_err(|e| Error::new(format!("cannot open RecordIO file {path} for writing: {e}")))?;
        Ok(Writer { name: path.to_string(), file: BufWriter::with_capacity(1 << 16, f), pos: 0, buf: Vec::new() })
    }
    pub fn write(&mut self, payload: &[u8]) -> Result<()> {
        self.buf.clear();
        frame_record(payload, &mut self.buf)?;
        self.file.write_all(&self.buf).map_err(|e| Error::new(format!("RecordIO {}: write failed: {e}", self.name)))?;
        self.pos += self.buf.len() as u64;
        Ok(())
    }
    pub fn tell(&self) -> u64 {
        self.pos
    }
    pub fn flush(&mut self) -> Result<()> {
        self.file.flush().map_err(|e| Error::new(format!("RecordIO {}: flush failed: {e}", self.name)))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.file.flush();
    }
}

/// Size of the fixed part of the image record header (`IfQQ`).
pub const HEADER_SIZE: usize = 24;

/// MXNet's `IRHeader`: `flag`, scalar `label`, `id`, `id2`, and when `flag > 0` the
/// `flag` float32 labels that follow the fixed part.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    pub flag: u32,
    pub label: f32,
    pub id: u64,
    pub id2: u64,
    pub labels: Vec<f32>,
}

/// The bytes of a header followed by `payload` (what `recordio.pack` returns). A
/// non-empty `labels` sets `flag` to its length and the scalar label to 0.
pub fn pack_header(h: &Header, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_SIZE + 4 * h.labels.len() + payload.len());
    let (flag, label) = if h.labels.is_empty() { (h.flag, h.label) } else { (h.labels.len() as u32, 0.0) };
    out.extend_from_slice(&flag.to_le_bytes());
    out.extend_from_slice(&label.to_le_bytes());
    out.extend_from_slice(&h.id.to_le_bytes());
    out.extend_from_slice(&h.id2.to_le_bytes());
    for l in &h.labels {
        out.extend_from_slice(&l.to_le_bytes());
    }
    out.extend_from_slice(payload);
    out
}

/// Splits a record into its header and the payload offset.
pub fn unpack_header(rec: &[u8]) -> Result<(Header, usize)> {
    if rec.len() < HEADER_SIZE {
        return Err(Error::new(format!(
            "recordio.unpack: record of {} bytes is shorter than the {HEADER_SIZE}-byte image header",
            rec.len()
        )));
    }
    let u32_at = |i: usize| u32::from_le_bytes([rec[i], rec[i + 1], rec[i + 2], rec[i + 3]]);
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&rec[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let flag = u32_at(0);
    let label = f32::from_bits(u32_at(4));
    let id = u64_at(8);
    let id2 = u64_at(16);
    let mut off = HEADER_SIZE;
    let mut labels = Vec::new();
    if flag > 0 {
        let need = (flag as usize).saturating_mul(4);
        if rec.len() - off < need {
            return Err(Error::new(format!(
                "recordio.unpack: header says {flag} labels but the record has only {} bytes after the header",
                rec.len() - off
            )));
        }
        labels = (0..flag as usize).map(|k| f32::from_bits(u32_at(off + 4 * k))).collect();
        off += need;
    }
    Ok((Header { flag, label, id, id2, labels }, off))
}

/// Parses MXNet's `.idx` text (`key<TAB>offset` per line) into (key, offset) pairs.
pub fn parse_index(text: &str, name: &str) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut it = line.split('\t');
        let key = it.next().unwrap_or("");
        let off = it
            .next()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .ok_or_else(|| Error::new(format!("RecordIO index {name}: line {} is not 'key<TAB>offset': {line:?}", n + 1)))?;
        out.push((key.to_string(), off));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_with_magic_inside() {
        let magic = MAGIC.to_le_bytes();
        let mut payloads: Vec<Vec<u8>> = vec![vec![], b"a".to_vec(), b"abcd".to_vec(), magic.to_vec()];
        let mut p = b"xxxx".to_vec();
        p.extend_from_slice(&magic);
        p.extend_from_slice(b"yyyyy");
        p.extend_from_slice(&magic);
        p.extend_from_slice(&magic);
        payloads.push(p);
        let mut unaligned = b"x".to_vec();
        unaligned.extend_from_slice(&magic);
        payloads.push(unaligned);
        let mut buf = Vec::new();
        for p in &payloads {
            frame_record(p, &mut buf).unwrap();
        }
        assert_eq!(buf.len() % 4, 0);
        assert_eq!(read_all(&buf, "mem").unwrap(), payloads);
    }

    #[test]
    fn bad_input_is_an_error() {
        let mut buf = Vec::new();
        frame_record(b"hello world", &mut buf).unwrap();
        for cut in 1..buf.len() {
            assert!(read_all(&buf[..cut], "mem").is_err(), "cut {cut}");
        }
        let mut bad = buf.clone();
        bad[0] ^= 1;
        assert!(read_all(&bad, "mem").unwrap_err().message().contains("magic"));
    }

    #[test]
    fn random_mutations_never_panic() {
        let mut buf = Vec::new();
        for k in 0..20u32 {
            let mut p: Vec<u8> = (0..k * 7).map(|i| (i * 31 + k) as u8).collect();
            if k % 3 == 0 {
                p.extend_from_slice(&MAGIC.to_le_bytes());
                p.extend_from_slice(&[1, 2, 3, 4]);
            }
            frame_record(&p, &mut buf).unwrap();
        }
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2000 {
            let mut m = buf.clone();
            for _ in 0..1 + next() % 4 {
                let i = (next() as usize) % m.len();
                m[i] = next() as u8;
            }
            if next() % 4 == 0 {
                let l = (next() as usize) % m.len();
                m.truncate(l);
            }
            let _ = read_all(&m, "fuzz");
            let _ = unpack_header(&m);
        }
    }

    #[test]
    fn header_roundtrip() {
        let h = Header { flag: 0, label: 3.5, id: 7, id2: 9, labels: vec![] };
        let b = pack_header(&h, b"img");
        let (u, off) = unpack_header(&b).unwrap();
        assert_eq!(u, h);
        assert_eq!(&b[off..], b"img");
        let h = Header { flag: 0, label: 0.0, id: 1, id2: 0, labels: vec![1.0, 2.0] };
        let b = pack_header(&h, b"");
        let (u, off) = unpack_header(&b).unwrap();
        assert_eq!(u.flag, 2);
        assert_eq!(u.labels, vec![1.0, 2.0]);
        assert_eq!(off, b.len());
        assert!(unpack_header(&b[..10]).is_err());
        assert!(unpack_header(&b[..26]).is_err());
    }
}
