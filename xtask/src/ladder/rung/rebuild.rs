//! Rung 2, rebuild: the recipe's build with `NVCC_PREPEND_FLAGS="-lineinfo -g"` (or `-G -g`)
//! and compilation caches unable to serve stale objects; then `cuobjdump -elf` on each binary
//! to check that line info is really there. The policy runs it only when the baseline found
//! binaries without line info: a baseline that builds the target builds it this way at once.

use std::path::Path;

use anyhow::{Context, Result};

use super::api::{step, Debug, Ran, Rung, RungIo, Step, StepCx, When};
use super::build::{from_step, with_options};
use crate::bundle::layout;
use crate::model::{Exit, Invocation, Role, RungId};
use crate::recipe::{Resolved, Step as RecipeStep};

pub struct Rebuild;

impl Rung for Rebuild {
    fn id(&self) -> RungId {
        RungId::Rebuild
    }

    fn describe(&self) -> &'static str {
        "rebuild with `NVCC_PREPEND_FLAGS=\"-lineinfo -g\"`, compilation caches off, and check the \
         binaries carry line info with `cuobjdump` (one full build)"
    }

    fn describe_for(&self, debug: Debug) -> String {
        format!(
            "rebuild with `NVCC_PREPEND_FLAGS=\"{}\"`, compilation caches off, and check the binaries \
             carry line info with `cuobjdump` (one full build)",
            debug.flags()
        )
    }

    /// The recipe's own build command and its time limit; a `pip install` says that it replaces
    /// the package installed in this Python environment.
    fn prompt(&self, r: &Resolved, debug: Debug) -> String {
        let mut text = self.describe_for(debug);
        let Some(b) = &r.build else { return text };
        let words = b.argv.join(" ");
        text.push_str(&format!(": `{}`", words.chars().take(160).collect::<String>()));
        if let Some(t) = b.timeout {
            text.push_str(&format!(", up to {} min", t.as_secs().div_ceil(60)));
        }
        let pip = b.argv.windows(2).any(|w| w[0].ends_with("pip") && w[1] == "install")
            || b.argv.windows(3).any(|w| w[0] == "-m" && w[1] == "pip" && w[2] == "install");
        if pip {
            text.push_str("; it reinstalls the package into this Python environment, replacing the installed one");
        }
        text
    }

    fn applies(&self, r: &Resolved) -> bool {
        r.build.is_some()
    }

    /// It builds and checks the binaries; the target does not run.
    fn runs_target(&self) -> bool {
        false
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        let Some(b) = &cx.recipe.build else { return Vec::new() };
        // The build's streams in `stdout.log` and `stderr.log`, like the target's.
        let build = invocation(cx.recipe, b, cx.debug, cx.inherited_prepend.as_deref(), RungId::Rebuild);
        let mut steps = vec![Step::new(Role::Build, build, "")];
        steps.extend(lineinfo_checks(b, When::Always));
        steps
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        let b = io.recipe().build.clone().context("the recipe has no `build` step to rebuild with")?;
        create_binary_dirs(&b)?;
        let mut steps = steps.iter().filter(|s| s.when == When::Always);
        let build = steps.next().context("the rebuild has no build step")?;
        let ran = io.exec(build)?;
        if !ran.success() {
            let logs = [io.dir().join(layout::STDERR), io.dir().join(layout::STDOUT)];
            return Err(build_failed(io, "the rebuild", ran, &logs, layout::STDERR));
        }
        let all_ok = check_lineinfo(io, &b, steps, "after the rebuild")?;
        Ok(Ran { faulted: false, yielded: all_ok, lineinfo: Some(all_ok), hung: false, static_sites: None })
    }
}

/// The `cuobjdump -elf` step of each binary, run `when`.
pub fn lineinfo_checks(b: &RecipeStep, when: When) -> Vec<Step> {
    b.binaries
        .iter()
        .enumerate()
        .map(|(i, bin)| {
            Step::new(Role::Cuobjdump, lineinfo_check(bin), format!("cuobjdump-{}", i + 1)).when(when)
        })
        .collect()
}

/// Runs the `cuobjdump` steps (one per binary, in order), writes the line-info table into the
/// rung's folder and says whether every binary has line info; a binary without is noted.
pub fn check_lineinfo<'s>(
    io: &mut dyn RungIo,
    b: &RecipeStep,
    checks: impl Iterator<Item = &'s Step>,
    when: &str,
) -> Result<bool> {
    let mut table = String::new();
    let mut all_ok = true;
    for (bin, check) in b.binaries.iter().zip(checks) {
        let ran = io.exec(check)?;
        let n = std::fs::File::open(layout::logs(io.dir(), &check.stem).0)
            .map(|f| count_line_sections_in(std::io::BufReader::new(f)))
            .unwrap_or(0);
        table.push_str(&format!("{}\t{n} line-info sections\t{}\n", bin.display(), ran.text()));
        if n == 0 {
            all_ok = false;
            io.note(format!(
                "`{}` has no line info {when}: the build may not use nvcc, may ignore \
                     NVCC_PREPEND_FLAGS, or may not have rebuilt it",
                bin.display()
            ));
        }
    }
    let table_path = io.dir().join(layout::LINEINFO_TABLE);
    std::fs::write(&table_path, table).with_context(|| format!("cannot write `{}`", table_path.display()))?;
    Ok(all_ok)
}

/// `nvcc -o DIR/FILE` does not create `DIR`: the build's output folders are made first.
pub fn create_binary_dirs(b: &RecipeStep) -> Result<()> {
    for d in b.binary_dirs() {
        std::fs::create_dir_all(&d)
            .with_context(|| format!("cannot create `{}` for the build's output", d.display()))?;
    }
    Ok(())
}

/// The build, as the recipe has it, with line info (and host debug info) added and caches
/// bypassed; `rung`'s recipe options apply (the baseline's when it builds the target first).
pub fn invocation(
    r: &Resolved,
    build: &RecipeStep,
    debug: Debug,
    inherited_prepend: Option<&str>,
    rung: RungId,
) -> Invocation {
    let mut inv = from_step(build);
    let flags = match inherited_prepend.filter(|s| !s.trim().is_empty()) {
        Some(prev) => format!("{} {prev}", debug.flags()),
        None => debug.flags(),
    };
    inv.set("NVCC_PREPEND_FLAGS", flags);
    // ccache would hand back the objects built without line info.
    inv.set("CCACHE_DISABLE", "1");
    // sccache cannot be disabled by a variable, but it can be told to recompile and re-cache.
    inv.set("SCCACHE_RECACHE", "1");
    with_options(inv, r, rung)
}

/// `cuobjdump -elf BINARY`.
pub fn lineinfo_check(binary: &Path) -> Invocation {
    Invocation {
        timeout: Some(std::time::Duration::from_secs(120)),
        ..Invocation::new(vec!["cuobjdump".into(), "-elf".into(), binary.display().to_string()])
    }
}

/// Line-info sections in `cuobjdump -elf` output (`.nv_debug_line_sass`, `.debug_line`).
pub fn count_line_sections(cuobjdump_elf: &str) -> usize {
    count_line_sections_in(cuobjdump_elf.as_bytes())
}

/// The same, read line by line: `cuobjdump -elf` of a large library (vLLM's `_C.abi3.so`)
/// prints far more than should be held in memory.
pub fn count_line_sections_in(reader: impl std::io::BufRead) -> usize {
    reader.split(b'\n').map_while(Result::ok).filter(|l| l.windows(10).any(|w| w == b"debug_line")).count()
}

/// How many of a failed build's last lines its note shows, and how many of its error lines
/// from before them.
const BUILD_TAIL: usize = 10;
const BUILD_ERRORS: usize = 6;

/// The error of a failed build (`what`: "the rebuild"), after a note with its last lines
/// ([`build_tail`]) from the first of `logs` that has any; `shown` names the log in the rung's
/// folder. The end of each log is read, never the whole of it (a log may be a gigabyte).
fn build_failed(io: &mut dyn RungIo, what: &str, ran: Exit, logs: &[std::path::PathBuf], shown: &str) -> anyhow::Error {
    use std::io::{Read, Seek, SeekFrom};
    let shown = format!("{}/{shown}", io.shown_dir());
    for log in logs {
        let Ok(mut f) = std::fs::File::open(log) else { continue };
        let mut bytes = Vec::new();
        let tail = f.seek(SeekFrom::End(0)).map_or(0, |len| len.saturating_sub(256 * 1024));
        if f.seek(SeekFrom::Start(tail)).is_err() || f.read_to_end(&mut bytes).is_err() {
            continue;
        }
        if let Some(lines) = build_tail(&String::from_utf8_lossy(&bytes)) {
            io.note(format!("the build's last lines (`{shown}`):\n{lines}"));
            break;
        }
    }
    anyhow::anyhow!(
        "{what} failed ({}): the notes above show its last lines, `{shown}` all of them; fix the build, then run again",
        ran.text()
    )
}

/// The lines of a failed build's log worth showing, indented and made safe for a terminal:
/// its last error lines (`error`, `fatal`, `undefined reference`; the compiler writes them to
/// stderr, which may come before its other output in the log), then its last lines, in the
/// log's order; `None` for an empty log.
fn build_tail(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return None;
    }
    let is_error = |l: &str| {
        let l = l.to_ascii_lowercase();
        l.contains("error") || l.contains("fatal") || l.contains("undefined reference")
    };
    let tail_from = lines.len().saturating_sub(BUILD_TAIL);
    let mut keep: Vec<usize> = (0..tail_from).filter(|&i| is_error(lines[i])).collect();
    keep.drain(..keep.len().saturating_sub(BUILD_ERRORS));
    keep.extend(tail_from..lines.len());
    let shown: Vec<String> = keep
        .iter()
        .map(|&i| format!("    {}", crate::ui::safe(&lines[i].chars().take(300).collect::<String>(), true)))
        .collect();
    Some(shown.join("\n"))
}

/// Builds the target when the recipe's binaries are missing (the `BinariesMissing` step, with
/// line info): true when it built. A failed build is the rung's error, naming its log. The
/// baseline and the hang rung (which replaces the baseline) both start so.
pub(super) fn build_if_missing(io: &mut dyn RungIo, steps: &[Step]) -> Result<bool> {
    let Some(b) = io.recipe().build.clone() else { return Ok(false) };
    if !b.binaries_missing() {
        return Ok(false);
    }
    io.say("building the target first, with line info (`-lineinfo -g`)");
    create_binary_dirs(&b)?;
    let build = step(steps, When::BinariesMissing)?;
    let ran = io.exec(build)?;
    if !ran.success() {
        let log = format!("{}.log", build.stem);
        let logs = [io.dir().join(&log)];
        return Err(build_failed(io, "the recipe's build", ran, &logs, &log));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_line_sections_in_real_cuobjdump_output() {
        // Recorded with cuobjdump 13.5 from PyPI (tests/fixtures/toolchain/README.md).
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/toolchain");
        let plain = std::fs::read_to_string(format!("{dir}/cuobjdump-elf-plain.txt")).unwrap();
        let li = std::fs::read_to_string(format!("{dir}/cuobjdump-elf-lineinfo.txt")).unwrap();
        assert_eq!(count_line_sections(&plain), 0);
        assert_eq!(count_line_sections(&li), 10);
    }

    /// The prompt before the rebuild says the recipe's own command and time limit, and that a
    /// `pip install` (the vLLM recipe's) replaces the package installed in the environment.
    #[test]
    fn the_rebuild_prompt_says_what_it_runs_and_what_it_replaces() {
        let resolve = |name: &str, sets: &[(&str, &str)]| {
            let r = crate::recipe::load(name).unwrap();
            let sets = sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            crate::recipe::resolve(&r, &sets, &Default::default()).unwrap()
        };
        let vllm = resolve("vllm", &[("vllm_src", "/src/vllm"), ("repro", "python3 repro.py")]);
        let p = Rebuild.prompt(&vllm, Debug::LineInfo);
        assert!(p.contains("pip install") && p.contains("replacing the installed one"), "{p}");
        assert!(p.contains(", up to 240 min"), "{p}");
        let cuda = resolve("cuda", &[("build", "make -B"), ("run", "./app")]);
        let p = Rebuild.prompt(&cuda, Debug::Full);
        assert!(p.contains(": `make -B`") && p.contains("\"-G -g\"") && !p.contains("replacing"), "{p}");
    }

    #[test]
    fn the_heading_names_the_flags_of_the_debug_level() {
        // The dry-run's heading over a `--device-debug` build said `-lineinfo` (issue 13).
        let full = Rebuild.describe_for(Debug::Full);
        assert!(full.contains("NVCC_PREPEND_FLAGS=\"-G -g\""), "{full}");
        assert!(!full.contains("-lineinfo"), "{full}");
        let default = Rebuild.describe_for(Debug::LineInfo);
        assert!(default.contains("NVCC_PREPEND_FLAGS=\"-lineinfo -g\""), "{default}");
    }
}
