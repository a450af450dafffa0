//! What leaves the machine: which files of a bundle `bundle pack` (both archives), `bundle show`
//! and `bundle report` carry, and how. An allow-list, not a list of what to keep out:
//!
//! - the tool's own files ([`tool_files`]: the manifest, `summary.md`, `findings.json`,
//!   `replay.sh`, the recorder it embeds, and every log and command file the manifest records)
//!   were written through the redactor as they were written, and leave as they are;
//! - every other file, wherever it lies and however deep (what the target wrote anywhere in the
//!   bundle, a rung's `jit/` builds, `sources/`, the tools' own reports), is told by its
//!   content, never by its name ([`content_of`]): text is redacted in place like a log
//!   ([`redact_left`], [`redact_file`]) and leaves redacted; a GPU coredump (an ELF core file
//!   for the CUDA machine), a CPU core (an ELF core file) and any other binary file stay out of
//!   archives unless asked for, each listed in `LEFT_OUT.tsv` with its size and why ([`Fate`]);
//! - a folder or file name that holds a secret is renamed with the secret taken out, at any
//!   depth, before anything records it.
//!
//! No walk stops at a depth. What bounds them is the number of files read ([`MAX_FILES`]) and
//! the size of a text read ([`MAX_TEXT`]); a file past either is not read and stays out of
//! archives, and a note says so.
//!
//! Must not: print; follow links; write anything but the files it redacts in place and the
//! names it renames (through a sibling file and a rename, so that a file linked elsewhere is
//! not changed there); or copy a secret into a [`Redaction`] or a note.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::layout;
use super::manifest::{CommandRecord, Manifest};
use crate::redact::{Lines, Redaction};

/// The most files a walk reads (not counting the tool's own, which are not read): past them a
/// file is not read, and archives leave it out. Half of `bundle unpack`'s 100,000 entries, so
/// that an archive of them and their folders unpacks with its defaults.
pub const MAX_FILES: usize = 50_000;
/// The largest text file read and redacted (1 GiB); a larger one is not read, and archives
/// leave it out.
pub const MAX_TEXT: u64 = 1 << 30;
/// What is read of a file to tell what it holds.
const HEAD: usize = 8192;

/// Why a coredump is left out of an archive by default (the `why` column of `LEFT_OUT.tsv`).
pub const COREDUMP_WHY: &str = "coredump: may hold model or user data; pack with --with-coredumps to include";
/// Why a binary file the tool did not write is left out: nothing read it, so nothing could
/// take a secret out of it.
pub const BINARY_WHY: &str =
    "binary file the tool did not write: not read, so not shared; pack with --include PATH to include it";
/// Why a text file over [`MAX_TEXT`] is left out.
pub const LARGE_WHY: &str =
    "text over 1 GiB the tool did not write: not read, so not shared; pack with --include PATH to include it as it is";
/// Why a file past the first [`MAX_FILES`] is left out.
pub const PAST_WHY: &str =
    "past the first 50,000 files read: not read, so not shared; pack with --include PATH to include it as it is";
/// Why a file that could not be read or redacted is left out.
pub const UNREAD_WHY: &str =
    "could not be read or redacted: not shared; pack with --include PATH to include it as it is";
/// Why a file that appeared after the files were read (while packing) is left out.
pub const INPUTS_WHY: &str = "the program's input values (the manifest's `inputs` says how many, from which \
     arguments): may be your data; pack with --with-inputs to include";
pub const UNSEEN_WHY: &str = "appeared while the bundle was packed: not read, so not shared";

/// What a file holds, told from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// Text (or empty): it can be read and redacted.
    Text,
    /// A GPU coredump: an ELF core file for the CUDA machine (`EM_CUDA`, the CUDA ABI), as the
    /// driver writes one.
    GpuCore,
    /// A CPU core: an ELF core file for any other machine.
    CpuCore,
    /// Anything else that is not text: executables, libraries, cubins, archives, pickles.
    Binary,
}

/// The ELF type of a core file.
const ET_CORE: u16 = 4;
/// The ELF machine and OS ABI of CUDA (cubins, GPU coredumps).
const EM_CUDA: u16 = 190;
const ELFOSABI_CUDA: u8 = 51;

/// What `head` (a file's first bytes) says the file holds: an ELF header's type and machine,
/// else text or not as [`crate::findings::scan::sniff`] tells it.
pub fn content_of(head: &[u8]) -> Content {
    if head.starts_with(b"\x7fELF") {
        if head.len() >= 20 {
            let big = head[5] == 2;
            let half = |i: usize| {
                let b = [head[i], head[i + 1]];
                if big {
                    u16::from_be_bytes(b)
                } else {
                    u16::from_le_bytes(b)
                }
            };
            if half(16) == ET_CORE {
                let cuda = half(18) == EM_CUDA || head[7] == ELFOSABI_CUDA;
                return if cuda { Content::GpuCore } else { Content::CpuCore };
            }
        }
        return Content::Binary;
    }
    match crate::findings::scan::sniff(head) {
        crate::findings::scan::Content::Binary => Content::Binary,
        _ => Content::Text,
    }
}

/// What the file at `path` holds ([`content_of`] of its first bytes); a regular file only.
pub fn content(path: &Path) -> std::io::Result<Content> {
    let mut f = crate::files::open_regular(path)?;
    let mut head = [0u8; HEAD];
    let mut n = 0;
    while n < HEAD {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(content_of(&head[..n]))
}

/// What becomes of a file of a bundle when the bundle is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// The tool's own, written through the redactor: it leaves as it is.
    Tool,
    /// Text the tool did not write through the redactor: redacted in place, then it leaves.
    Text,
    /// Archives leave it out unless asked for (`--include`, and for a coredump
    /// `--with-coredumps`): why, as `LEFT_OUT.tsv` says it.
    Left { why: &'static str, coredump: bool },
}

impl Fate {
    fn left(why: &'static str) -> Fate {
        Fate::Left { why, coredump: false }
    }

    /// Why archives leave it out, in a word or two (`coredump`, `binary file ...`): `None`
    /// when it leaves.
    pub fn short(self) -> Option<&'static str> {
        match self {
            Fate::Left { why, .. } => Some(why.split([':', ';']).next().unwrap_or(why)),
            _ => None,
        }
    }
}

/// The fate of a file the tool did not write, `bytes` long, from what it holds: text up to
/// [`MAX_TEXT`] leaves (redacted), the rest stays out.
fn fate_of(content: Content, bytes: u64) -> Fate {
    match content {
        Content::Text if bytes > MAX_TEXT => Fate::left(LARGE_WHY),
        Content::Text => Fate::Text,
        Content::GpuCore | Content::CpuCore => Fate::Left { why: COREDUMP_WHY, coredump: true },
        Content::Binary => Fate::left(BINARY_WHY),
    }
}

/// The files the tool wrote through the redactor as it wrote them, relative to the bundle: the
/// manifest, `summary.md`, `findings.json`, `replay.sh`, `SHA256SUMS`, `LEFT_OUT.tsv`, the
/// recorder it embeds, and the logs and command files of every command the manifest records.
pub fn tool_files(m: &Manifest) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = [
        layout::MANIFEST,
        layout::SUMMARY,
        layout::FINDINGS,
        layout::REPLAY,
        layout::SUMS,
        layout::LEFT_OUT,
        layout::RECORDER_FILE,
    ]
    .into_iter()
    .map(String::from)
    .collect();
    out.extend(tool_logs(m.rungs.iter().flat_map(|r| &r.commands).chain(&m.collected)));
    out
}

/// The logs of these commands and their command files (`command.txt`, `<stem>.command.txt`),
/// relative to the bundle: what the runner wrote through the redactor.
pub fn tool_logs<'a>(records: impl IntoIterator<Item = &'a CommandRecord>) -> BTreeSet<String> {
    let inside = |p: &str| {
        !p.is_empty()
            && !p.starts_with('/')
            && Path::new(p).components().all(|c| matches!(c, std::path::Component::Normal(_)))
    };
    let mut out = BTreeSet::new();
    for c in records {
        for log in [&c.stdout, &c.stderr].into_iter().filter(|l| inside(l)) {
            out.insert(log.clone());
        }
        if inside(&c.stdout) {
            let log = Path::new(&c.stdout);
            let command = layout::command_file(log.parent().unwrap_or(Path::new("")), log);
            out.insert(command.to_string_lossy().into_owned());
        }
    }
    out
}

/// `path` relative to `root`, `/`-separated.
fn rel(root: &Path, path: &Path) -> String {
    let r = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<Cow<str>> = r.components().map(|c| c.as_os_str().to_string_lossy()).collect();
    parts.join("/")
}

/// What [`redact_left`] did: the fate of each file it saw (path relative to the root → size and
/// fate, the names as they are after renaming), and the notes for the record.
#[derive(Debug, Default)]
pub struct Sorted {
    pub fates: BTreeMap<String, (u64, Fate)>,
    pub notes: Vec<String>,
}

/// Makes what lies under `dir` (a rung's folder as the rung ends, or the whole bundle `root`
/// before it is packed) fit to leave: every folder and file whose name holds a secret renamed
/// with it taken out (deepest first, at any depth), then every file that is not the tool's own
/// (`tool`, relative to `root`: [`tool_files`], [`tool_logs`]) told by its content: text
/// redacted in place ([`redact_file`]: whole PEM blocks; a file is rewritten only when something
/// was found), coredumps and binary files left unread. Reads at most [`MAX_FILES`] files and
/// texts of at most [`MAX_TEXT`] bytes; what it found is reported at `path:LINE` relative to
/// `root`.
pub fn redact_left(dir: &Path, root: &Path, tool: &BTreeSet<String>, out: &mut Vec<Redaction>) -> Sorted {
    let mut sorted = Sorted::default();
    rename_secret_names(dir, root, out, &mut sorted.notes);
    let mut read = 0usize;
    let mut past = 0usize;
    for e in walkdir::WalkDir::new(dir).min_depth(1).follow_links(false).sort_by_file_name() {
        let e = match e {
            Ok(e) => e,
            Err(err) => {
                let at = err.path().map(|p| rel(root, p)).unwrap_or_default();
                sorted.notes.push(format!(
                    "cannot read `{at}` ({}): what is under it is not shared",
                    err.io_error().map(ToString::to_string).unwrap_or_default()
                ));
                continue;
            }
        };
        if !e.file_type().is_file() {
            continue;
        }
        let place = rel(root, e.path());
        let bytes = e.metadata().map(|m| m.len()).unwrap_or(0);
        let fate = if tool.contains(&place) {
            Fate::Tool
        } else if read >= MAX_FILES {
            past += 1;
            Fate::left(PAST_WHY)
        } else {
            read += 1;
            match content(e.path()).map(|c| fate_of(c, bytes)) {
                Ok(Fate::Text) => match redact_file(e.path(), &place, out) {
                    Ok(()) => Fate::Text,
                    Err(err) => {
                        sorted.notes.push(format!("{err:#}: `{place}` is not shared"));
                        Fate::left(UNREAD_WHY)
                    }
                },
                Ok(f) => f,
                Err(err) => {
                    sorted.notes.push(format!("cannot read `{place}` ({err}): it is not shared"));
                    Fate::left(UNREAD_WHY)
                }
            }
        };
        sorted.fates.insert(place, (bytes, fate));
    }
    if past > 0 {
        sorted.notes.push(format!(
            "{past} file(s) under `{}` past the first {MAX_FILES} were not read: archives leave them out \
             (`{}`)",
            rel(root, dir),
            layout::LEFT_OUT
        ));
    }
    sorted
}

/// The fates of a bundle's files (`files`: relative to `root`, in walk order, with sizes) as
/// [`redact_left`] would decide them, reading only the first bytes of each and changing
/// nothing: what `bundle show` says of them.
pub fn fates(root: &Path, files: &[(String, u64)], tool: &BTreeSet<String>) -> Vec<Fate> {
    let mut read = 0usize;
    files
        .iter()
        .map(|(f, bytes)| {
            if tool.contains(f) {
                return Fate::Tool;
            }
            read += 1;
            if read > MAX_FILES {
                return Fate::left(PAST_WHY);
            }
            content(&root.join(f)).map(|c| fate_of(c, *bytes)).unwrap_or(Fate::left(UNREAD_WHY))
        })
        .collect()
}

/// Renames every folder and file under `dir` whose name holds a secret, the deepest first, so
/// that no place recorded, no `SHA256SUMS` or `LEFT_OUT.tsv` line and no archive member name
/// carries it; each rename is a redaction at its new place and a note.
fn rename_secret_names(dir: &Path, root: &Path, out: &mut Vec<Redaction>, notes: &mut Vec<String>) {
    let entries: Vec<(PathBuf, bool)> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .follow_links(false)
        .contents_first(true)
        .into_iter()
        .flatten()
        .map(|e| (e.path().to_path_buf(), e.file_type().is_dir()))
        .collect();
    for (p, is_dir) in entries {
        let what = if is_dir { "folder" } else { "file" };
        match renamed_if_secret(&p) {
            Ok(Some((to, kind))) => {
                let at = rel(root, &to);
                notes.push(format!("a {what} name held a secret ({kind}): renamed to `{at}`"));
                out.push(Redaction { place: at, what: format!("{kind} in a {what} name") });
            }
            Ok(None) => {}
            Err(e) => notes.push(format!(
                "cannot rename a {what} whose name holds a secret: {e}; remove it before sharing"
            )),
        }
    }
}

/// A name with the secrets it holds taken out as [`crate::redact`] finds them: each replaced by
/// `REDACTED` (no brackets: a plain file name), `/` and control characters by `_`. `None` when
/// it holds none.
pub fn clean_name(name: &str) -> Option<String> {
    let (red, _) = crate::redact::redact_line(name);
    let Cow::Owned(red) = red else { return None };
    if red == name {
        return None;
    }
    Some(
        red.replace(crate::redact::MARK, "REDACTED")
            .chars()
            .map(|c| if c == '/' || c.is_control() { '_' } else { c })
            .collect(),
    )
}

/// A relative path with [`clean_name`] applied to each of its parts.
pub fn clean_path(rel: &str) -> String {
    rel.split('/').map(|p| clean_name(p).unwrap_or_else(|| p.to_string())).collect::<Vec<_>>().join("/")
}

/// A path as the terminal shows it: the secrets its names hold redacted, as in a log.
pub fn shown(rel: &str) -> Cow<'_, str> {
    crate::redact::redact_line(rel).0
}

/// Renames `p` when its file name holds a secret ([`clean_name`]); a free name is found when
/// the clean one is taken. The new path and the kind of secret; `None` when it holds none.
fn renamed_if_secret(p: &Path) -> std::io::Result<Option<(PathBuf, String)>> {
    let Some(name) = p.file_name().map(|n| n.to_string_lossy().into_owned()) else { return Ok(None) };
    let Some(clean) = clean_name(&name) else { return Ok(None) };
    let (_, what) = crate::redact::redact_line(&name);
    let mut to = p.with_file_name(&clean);
    let mut n = 1;
    while std::fs::symlink_metadata(&to).is_ok() {
        n += 1;
        to = p.with_file_name(format!("{clean}.{n}"));
    }
    std::fs::rename(p, &to)?;
    Ok(Some((to, what.first().copied().unwrap_or("secret").to_string())))
}

/// Redacts a text file in place, line by line ([`Lines`]: a PEM block whole), as a log is
/// redacted; the file is rewritten (through a sibling file and a rename) only when a line
/// changes. Findings are reported at `place:LINE`.
pub fn redact_file(path: &Path, place: &str, out: &mut Vec<Redaction>) -> Result<()> {
    let open =
        || crate::files::open_regular(path).with_context(|| format!("cannot read `{}`", path.display()));
    // First pass: is there anything to redact? (Usually not: no copy then.)
    let mut line = Vec::new();
    let mut reader = BufReader::new(open()?);
    let mut lines = Lines::new();
    let mut changes = false;
    while {
        line.clear();
        reader.read_until(b'\n', &mut line).with_context(|| format!("cannot read `{}`", path.display()))? > 0
    } {
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = String::from_utf8_lossy(body);
        if matches!(lines.line(&text).0, Cow::Owned(new) if new != text) {
            changes = true;
            break;
        }
    }
    if !changes {
        return Ok(());
    }
    // A hidden sibling of its own (`.NAME.redacting`), renamed over the file at the end.
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.redacting"));
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
            (Cow::Owned(new), labels) if new != text => {
                w.write_all(new.as_bytes()).map_err(write_err)?;
                w.write_all(&line[body.len()..]).map_err(write_err)?;
                out.extend(
                    labels
                        .into_iter()
                        .map(|what| Redaction { place: format!("{place}:{n}"), what: what.to_string() }),
                );
            }
            _ => w.write_all(&line).map_err(write_err)?,
        }
    }
    w.flush().map_err(write_err)?;
    drop(w);
    // The copy keeps the file's mode (an executable script stays one).
    if let Ok(m) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, m.permissions());
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace `{}`", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(class_data_abi: [u8; 3], e_type: u16, machine: u16) -> Vec<u8> {
        let mut v = b"\x7fELF".to_vec();
        v.extend_from_slice(&class_data_abi);
        v.resize(16, 0);
        v.extend_from_slice(&e_type.to_le_bytes());
        v.extend_from_slice(&machine.to_le_bytes());
        v.resize(64, 0);
        v
    }

    /// A GPU coredump and a CPU core are told by their ELF header, whatever their names; a
    /// cubin or an executable is a binary file, and a text named like a dump is text.
    #[test]
    fn content_is_told_by_the_bytes_not_the_name() {
        let real = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/bundles/oob_read-full/rungs/04-coredump/core_vm.4013.1796034874"
        ))
        .unwrap();
        assert_eq!(content_of(&real[..HEAD]), Content::GpuCore);
        assert_eq!(content_of(&elf([2, 1, 0], ET_CORE, EM_CUDA)), Content::GpuCore);
        assert_eq!(content_of(&elf([2, 1, 0], ET_CORE, 62)), Content::CpuCore);
        assert_eq!(content_of(&elf([2, 1, ELFOSABI_CUDA], 2, EM_CUDA)), Content::Binary, "a cubin");
        assert_eq!(content_of(&elf([2, 1, 0], 3, 62)), Content::Binary, "a library");
        // Big-endian: a core for another machine.
        let mut be = elf([2, 2, 0], 0, 0);
        be[16..18].copy_from_slice(&ET_CORE.to_be_bytes());
        assert_eq!(content_of(&be), Content::CpuCore);
        assert_eq!(content_of(b"\x7fELF"), Content::Binary, "a cut header");
        assert_eq!(content_of(b"token ghp_x in a file named core_x\n"), Content::Text);
        assert_eq!(content_of(b""), Content::Text);
        assert_eq!(content_of(b"\0\x01\x02 blob"), Content::Binary);
        assert_eq!(
            fate_of(Content::Text, MAX_TEXT + 1).short(),
            Some("text over 1 GiB the tool did not write")
        );
        assert_eq!(fate_of(Content::CpuCore, 1).short(), Some("coredump"));
    }

    /// The numbers the reasons spell out are the limits'.
    #[test]
    fn the_reasons_say_the_limits() {
        assert!(LARGE_WHY.contains(&format!("{} GiB", MAX_TEXT >> 30)));
        assert!(PAST_WHY.contains("50,000") && MAX_FILES == 50_000);
    }

    /// Redacting a file twice changes it once: the second pass finds nothing and rewrites
    /// nothing, so packing a packed bundle again gives the same bytes.
    #[test]
    fn a_redacted_file_is_left_as_it_is() {
        let dir = std::env::temp_dir().join(format!("xtask-leaves-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("notes.txt");
        let token = format!("ghp_{}", "Zq8".repeat(12));
        std::fs::write(&p, format!("first\ntoken {token}\nHF_TOKEN=hf_{}\n", "Ab3".repeat(10))).unwrap();
        let mut found = Vec::new();
        redact_file(&p, "notes.txt", &mut found).unwrap();
        let once = std::fs::read_to_string(&p).unwrap();
        assert!(!once.contains(&token) && once.starts_with("first\ntoken ghp_[REDACTED]\n"), "{once}");
        assert!(!found.is_empty());
        let mut again = Vec::new();
        redact_file(&p, "notes.txt", &mut again).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), once);
        assert!(again.is_empty(), "{again:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_are_cleaned_part_by_part() {
        let token = format!("ghp_{}", "Zq8".repeat(12));
        assert_eq!(clean_name(&format!("{token}.txt")).as_deref(), Some("ghp_REDACTED.txt"));
        assert_eq!(clean_name("stdout.log"), None);
        assert_eq!(clean_path(&format!("rungs/{token}/x.bin")), "rungs/ghp_REDACTED/x.bin");
        assert!(!shown(&format!("a/{token}.log")).contains(&token));
    }
}
