//! The generated compute-sanitizer logs: a real recording's records (`RecordTemplate`)
//! repeated with the thread and block numbers varied up to a size (`generate`), and the
//! `--names` logs of N records each with its own long kernel name.
//!
//! Must not: run a process, or hold a generated log in memory (they are written through the
//! writer given; `names_log` is for tests).

use std::io::{self, BufWriter, Write};

/// One record of a real log (`========= Invalid ...` to the next `========= ` line), split
/// around its `by thread (..) in block (..)` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordTemplate {
    /// Lines before the `by thread` line, each with its newline.
    pub head: String,
    /// The `by thread` line up to `by thread ` (its prefix and indentation).
    pub by_prefix: String,
    pub thread: [u32; 3],
    pub block: [u32; 3],
    /// Lines after the `by thread` line, ending with the blank `========= ` line.
    pub tail: String,
}

/// Finds the records of a compute-sanitizer text log: each from an `========= Invalid ...`
/// line to the next blank `========= ` line, keeping only `=========` lines (the program's
/// own output interleaved with them is left out). Records without a parsable `by thread`
/// line are skipped.
pub fn extract_records(log: &str) -> Vec<RecordTemplate> {
    let mut out = Vec::new();
    let mut cur: Option<Vec<&str>> = None;
    for line in log.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.starts_with("========= Invalid ") {
            cur = Some(vec![line]);
            continue;
        }
        let Some(lines) = cur.as_mut() else { continue };
        if !line.starts_with("=========") {
            continue;
        }
        lines.push(line);
        if line.trim_end() == "=========" {
            if let Some(t) = template(lines) {
                out.push(t);
            }
            cur = None;
        }
    }
    out
}

pub(super) fn template(lines: &[&str]) -> Option<RecordTemplate> {
    let by = lines.iter().position(|l| l.contains("by thread ("))?;
    let line = lines[by];
    let start = line.find("by thread ")?;
    let (t, b) = line[start + "by thread ".len()..].split_once(" in block ")?;
    let join = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    Some(RecordTemplate {
        head: join(&lines[..by]),
        by_prefix: line[..start + "by thread ".len()].to_string(),
        thread: dim3(t)?,
        block: dim3(b)?,
        tail: join(&lines[by + 1..]),
    })
}

pub(super) fn dim3(s: &str) -> Option<[u32; 3]> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    let mut it = inner.split(',').map(|p| p.trim().parse::<u32>().ok());
    let d = [it.next()??, it.next()??, it.next()??];
    it.next().is_none().then_some(d)
}

/// What [`generate`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenStats {
    pub bytes: u64,
    pub records: u64,
}

/// Threads per block used when numbering generated records.
pub(super) const THREADS: u64 = 1024;

/// Writes a sanitizer log of at least `target_bytes`: the banner, the templates in turn
/// (record `i` gets thread x `i % 1024` and block x = the template's + `i / 1024`, other
/// components as recorded), and an `ERROR SUMMARY` with the number of records.
pub fn generate<W: Write>(templates: &[RecordTemplate], target_bytes: u64, w: W) -> io::Result<GenStats> {
    if templates.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no records to repeat"));
    }
    let mut w = BufWriter::with_capacity(1 << 20, w);
    let banner = b"========= COMPUTE-SANITIZER\n";
    w.write_all(banner)?;
    let mut bytes = banner.len() as u64;
    let mut records = 0u64;
    let mut line = Vec::with_capacity(256);
    while bytes < target_bytes {
        let t = &templates[(records % templates.len() as u64) as usize];
        let tx = (records % THREADS) as u32;
        let bx = t.block[0].wrapping_add((records / THREADS) as u32);
        line.clear();
        line.extend_from_slice(t.by_prefix.as_bytes());
        push_dim3(&mut line, [tx, t.thread[1], t.thread[2]]);
        line.extend_from_slice(b" in block ");
        push_dim3(&mut line, [bx, t.block[1], t.block[2]]);
        line.push(b'\n');
        w.write_all(t.head.as_bytes())?;
        w.write_all(&line)?;
        w.write_all(t.tail.as_bytes())?;
        bytes += (t.head.len() + line.len() + t.tail.len()) as u64;
        records += 1;
    }
    let summary = format!("========= ERROR SUMMARY: {records} errors\n");
    w.write_all(summary.as_bytes())?;
    bytes += summary.len() as u64;
    w.flush()?;
    Ok(GenStats { bytes, records })
}

/// `(x,y,z)`, as compute-sanitizer prints a thread or block index.
pub(super) fn push_dim3(out: &mut Vec<u8>, d: [u32; 3]) {
    out.push(b'(');
    for (i, v) in d.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_u32(out, v);
    }
    out.push(b')');
}

pub(super) fn push_u32(out: &mut Vec<u8>, mut v: u32) {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Kernel name `i` of `chars` characters: `k00042_` then identifier text with a `::` every 24
/// characters (so that the comparison of qualified names is exercised), ending in a letter.
pub fn distinct_name(i: usize, chars: usize) -> String {
    const FILL: &str = "abcdefghijklmnopqrstuv::";
    let mut s = format!("k{i:05}_");
    s.extend(FILL.chars().cycle().take(chars.saturating_sub(s.len())));
    if s.ends_with(':') {
        s.pop();
        s.push('z');
    }
    s
}

/// `t` with the kernel of its `at KERNEL(...)+0x.. in f:l` line renamed to `name`.
pub(super) fn renamed(t: &RecordTemplate, name: &str) -> Option<RecordTemplate> {
    let mut head = String::with_capacity(t.head.len() + name.len());
    let mut done = false;
    for line in t.head.split_inclusive('\n') {
        let at = line.find("     at ").map(|p| p + "     at ".len());
        match at.filter(|_| !done) {
            Some(start) => {
                let rest = &line[start..];
                let end = rest.find(['(', '+']).unwrap_or(rest.len());
                head.push_str(&line[..start]);
                head.push_str(name);
                head.push_str(&rest[end..]);
                done = true;
            }
            None => head.push_str(line),
        }
    }
    done.then(|| RecordTemplate { head, ..t.clone() })
}

/// Writes a memcheck log of `n` records of `t`, each with its own kernel name of `chars`
/// characters ([`distinct_name`]), and the `ERROR SUMMARY`. Returns the bytes written.
pub fn write_names_log<W: Write>(t: &RecordTemplate, n: usize, chars: usize, w: W) -> io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, w);
    let mut bytes = 0u64;
    let mut put = |w: &mut BufWriter<W>, s: &str| -> io::Result<()> {
        bytes += s.len() as u64;
        w.write_all(s.as_bytes())
    };
    put(&mut w, "========= COMPUTE-SANITIZER\n")?;
    for i in 0..n {
        let r = renamed(t, &distinct_name(i, chars)).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the record has no `at KERNEL` line")
        })?;
        let by = format!(
            "{}({},{},{}) in block ({},{},{})\n",
            r.by_prefix, r.thread[0], r.thread[1], r.thread[2], r.block[0], r.block[1], r.block[2]
        );
        put(&mut w, &r.head)?;
        put(&mut w, &by)?;
        put(&mut w, &r.tail)?;
    }
    put(&mut w, &format!("========= ERROR SUMMARY: {n} errors\n"))?;
    w.flush()?;
    Ok(bytes)
}

/// A names log in memory (tests).
pub fn names_log(t: &RecordTemplate, n: usize, chars: usize) -> String {
    let mut out = Vec::new();
    write_names_log(t, n, chars, &mut out).expect("writing to memory");
    String::from_utf8(out).expect("UTF-8")
}
