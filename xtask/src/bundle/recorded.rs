//! What the bundle writer and the runner share: the allow-listed environment recorded in the
//! manifest, the redactions of a run's logs as the manifest lists them, and tool reports
//! redacted in place.
//!
//! Must not: write anything but the report it redacts (and rename a file whose name holds a
//! secret), or copy a secret into a record.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};

use crate::model::Stream;
use crate::redact::{redact_env, Lines, Redaction};

/// Inherited variables recorded in [`Manifest::environment`]: these names, and names
/// starting with one of [`ENV_ALLOW_PREFIXES`].
pub const ENV_ALLOW: &[&str] = &[
    "PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "CC",
    "CXX",
    "CUDACXX",
    "MAX_JOBS",
    "OMP_NUM_THREADS",
    "TMPDIR",
];

/// Prefixes of the inherited variables recorded in [`Manifest::environment`].
pub const ENV_ALLOW_PREFIXES: &[&str] = &[
    "CUDA_",
    "CUDNN_",
    "CUBLAS_",
    "NCCL_",
    "NVIDIA_",
    "NVCC_",
    "PYTORCH_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "TRITON_",
    "VLLM_",
    "HF_",
    "TRANSFORMERS_",
    "XLA_",
    "COMPUTE_SANITIZER_",
];

/// The allow-listed part of an environment ([`ENV_ALLOW`], [`ENV_ALLOW_PREFIXES`]),
/// redacted, each redaction reported at `environment`.
pub fn recorded_environment(
    vars: impl IntoIterator<Item = (String, String)>,
    out: &mut Vec<Redaction>,
) -> BTreeMap<String, String> {
    let mut kept: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(k, _)| {
            ENV_ALLOW.contains(&k.as_str()) || ENV_ALLOW_PREFIXES.iter().any(|p| k.starts_with(p))
        })
        .collect();
    kept.sort();
    redact_env(&kept, "environment", out).into_iter().collect()
}

/// The redactions of a run's logs as the manifest lists them: one per log and kind of secret,
/// with the number of lines (both streams counted when they share a log).
pub fn log_redactions(redacted: &[(Stream, &str, u64)], stdout: &str, stderr: &str) -> Vec<Redaction> {
    let mut counts: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for &(stream, kind, n) in redacted {
        let log = match stream {
            Stream::Stdout => stdout,
            Stream::Stderr => stderr,
        };
        *counts.entry((log, kind)).or_insert(0) += n;
    }
    counts
        .into_iter()
        .map(|((log, kind), n)| Redaction {
            place: log.to_string(),
            what: format!("{kind} ({n} line{})", if n == 1 { "" } else { "s" }),
        })
        .collect()
}

/// Redacts a tool's text report (compute-sanitizer's XML) in place, line by line ([`Lines`]:
/// a PEM block whole); the file is rewritten only when something was found. Findings are
/// reported at `place:LINE`.
pub fn redact_file(path: &Path, place: &str, out: &mut Vec<Redaction>) -> Result<()> {
    use std::io::{BufRead, BufReader, BufWriter, Write};
    let open =
        || crate::files::open_regular(path).with_context(|| format!("cannot read `{}`", path.display()));
    // First pass: is there anything to redact? (Usually not: no copy then.)
    let mut first = None;
    let mut line = Vec::new();
    let mut reader = BufReader::new(open()?);
    let mut n = 0u64;
    let mut lines = Lines::new();
    while {
        line.clear();
        reader.read_until(b'\n', &mut line).with_context(|| format!("cannot read `{}`", path.display()))? > 0
    } {
        n += 1;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        if matches!(lines.line(&String::from_utf8_lossy(body)).0, std::borrow::Cow::Owned(_)) {
            first = Some(n);
            break;
        }
    }
    if first.is_none() {
        return Ok(());
    }
    let tmp = path.with_extension("redacting");
    let write_err =
        |e: std::io::Error| anyhow::Error::new(e).context(format!("cannot write `{}`", tmp.display()));
    let mut w = BufWriter::new(std::fs::File::create(&tmp).map_err(write_err)?);
    let mut reader = BufReader::new(open()?);
    let mut n = 0u64;
    let mut lines = Lines::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).with_context(|| format!("cannot read `{}`", path.display()))?
            == 0
        {
            break;
        }
        n += 1;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = String::from_utf8_lossy(body);
        match lines.line(&text) {
            (std::borrow::Cow::Borrowed(_), _) => w.write_all(&line).map_err(write_err)?,
            (std::borrow::Cow::Owned(new), labels) => {
                w.write_all(new.as_bytes()).map_err(write_err)?;
                w.write_all(&line[body.len()..]).map_err(write_err)?;
                out.extend(
                    labels
                        .into_iter()
                        .map(|what| Redaction { place: format!("{place}:{n}"), what: what.to_string() }),
                );
            }
        }
    }
    w.flush().map_err(write_err)?;
    drop(w);
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace `{}`", path.display()))
}

/// Everything in a rung folder `dir` that the tool did not write through the redactor
/// itself (`logged`: its logs and command files were): the tools' own reports
/// (compute-sanitizer's `--save` XML, the rebuild's table) and whatever the target left
/// there. Text is redacted in place; a name that holds a secret is renamed, the secret taken
/// out; a binary file is left as it is, unread, and archives leave it out
/// (`archive::BINARY_WHY`). `root` is the bundle's, for the places recorded. Returns notes
/// for the rung's record.
pub fn redact_left(
    dir: &Path,
    root: &Path,
    logged: &[std::path::PathBuf],
    out: &mut Vec<Redaction>,
) -> Vec<String> {
    let mut notes = Vec::new();
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    // A folder the target made whose name holds a secret is renamed too, the deepest first, so
    // that no place recorded and no archive member name carries it.
    let dirs: Vec<std::path::PathBuf> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .max_depth(4)
        .follow_links(false)
        .contents_first(true)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_dir())
        .map(|e| e.into_path())
        .collect();
    for d in dirs {
        match renamed_if_secret(&d) {
            Ok(Some((to, what))) => {
                out.push(Redaction { place: rel(&to), what: format!("{what} in a folder name") });
                notes.push(format!("a folder name held a secret ({what}): renamed to `{}`", rel(&to)));
            }
            Ok(None) => {}
            Err(e) => notes.push(format!(
                "cannot rename a folder whose name holds a secret: {e}; remove it before sharing"
            )),
        }
    }
    let files: Vec<std::path::PathBuf> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .max_depth(4)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect();
    for p in files {
        let p = match renamed_if_secret(&p) {
            Ok(Some((to, what))) => {
                out.push(Redaction { place: rel(&to), what: format!("{what} in a file name") });
                notes.push(format!("a file name held a secret ({what}): renamed to `{}`", rel(&to)));
                to
            }
            Ok(None) => p,
            Err(e) => {
                notes.push(format!(
                    "cannot rename a file whose name holds a secret: {e}; remove it before sharing"
                ));
                continue;
            }
        };
        if logged.contains(&p) || crate::bundle::archive::is_coredump(&rel(&p)) {
            continue;
        }
        let mut head = [0u8; 8192];
        let n = match crate::files::open_regular(&p).and_then(|mut f| {
            use std::io::Read;
            f.read(&mut head)
        }) {
            Ok(n) => n,
            Err(_) => continue,
        };
        if crate::findings::scan::sniff(&head[..n]) == crate::findings::scan::Content::Binary {
            continue;
        }
        let place = rel(&p);
        if let Err(e) = redact_file(&p, &place, out) {
            notes.push(format!("{e:#}: check `{place}` for secrets before sharing the bundle"));
        }
    }
    notes
}

/// Renames `p` when its file name holds a secret (the redactor's rules on the name): the
/// secret replaced by `REDACTED` (no brackets, a plain file name). `None` when it holds none.
fn renamed_if_secret(p: &Path) -> std::io::Result<Option<(std::path::PathBuf, String)>> {
    let Some(name) = p.file_name().map(|n| n.to_string_lossy().into_owned()) else { return Ok(None) };
    let (red, what) = crate::redact::redact_line(&name);
    if !matches!(red, std::borrow::Cow::Owned(_)) {
        return Ok(None);
    }
    let clean: String = red
        .replace(crate::redact::MARK, "REDACTED")
        .chars()
        .map(|c| if c == '/' || c.is_control() { '_' } else { c })
        .collect();
    let mut to = p.with_file_name(&clean);
    let mut n = 1;
    while to.exists() {
        n += 1;
        to = p.with_file_name(format!("{clean}.{n}"));
    }
    std::fs::rename(p, &to)?;
    Ok(Some((to, what.first().copied().unwrap_or("secret").to_string())))
}
