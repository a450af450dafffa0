//! The baseline as `watch` runs it: the one run of a long job (a server, a training run),
//! armed ([`super::parts::armed::watched`]) but at full speed (never launch-blocking), with no time
//! limit, for as long as it runs. A device fault leaves its dumps and ends the job (the
//! driver's abort after the dump: `skip_abort` hid the fault from a job on the H200, see
//! [`super::parts::armed::watched`]); they are read after the job ends, with the static launch sites
//! of a native binary ([`super::parts::sites`]) for the launch line; a hang is taken while the job runs, with the hang rung's evidence (py-spy stacks, the
//! NCCL flight recorder, a user-triggered dump of every CUDA process), when:
//! - nothing was printed for `hang_after` and a GPU is busy (a server idle between requests
//!   prints nothing either, but leaves the GPU idle), checked every [`GPU_CHECK`];
//! - PyTorch's NCCL watchdog prints its timeout line: taken at once, before the watchdog's
//!   abort ends the job.
//!
//! Must not: stop a job that runs normally, make it launch-blocking, or leave a process, a
//! pipe or a CPU core behind.

use std::cell::Cell;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;

use super::api::{exit_of, step, At, Beside, Ran, Run, Rung, RungIo, Step, StepCx, When, DUMP};
use super::parts::build::with_options;
use super::parts::{armed, dumps, evidence, hung, sites};
use crate::findings::verdict::Part;
use crate::launch::container::Access;
use crate::model::{Exit, Role, RungId};
use crate::process::{Control, Running};

/// How the note that a watched job counted as hung starts (the `watch` command reads it back
/// from the rung's record).
pub const HUNG_NOTE: &str = "the job counted as hung";

/// How often a silent job's GPUs are looked at once `hang_after` has passed.
pub const GPU_CHECK: Duration = Duration::from_secs(5);

/// The most bytes of GPU dumps a watched job keeps: a long job whose workers are restarted
/// after a fault can fault again and again; past this the oldest dumps are removed (each one
/// a note), so the disk stays bounded. With the five skip flags a dump is a few MB.
pub const DUMP_CAP: u64 = 8 << 30;
/// How often the dumps' sizes are looked at.
const DUMP_CHECK: Duration = Duration::from_secs(1);

/// The dumps to remove so that the rest fit in `cap`: the oldest first, never the newest.
/// `dumps` are (path, bytes, modified).
pub fn over_cap(mut dumps: Vec<(std::path::PathBuf, u64, SystemTime)>, cap: u64) -> Vec<std::path::PathBuf> {
    dumps.sort_by_key(|(p, _, t)| (*t, p.clone()));
    let mut total: u64 = dumps.iter().map(|(_, b, _)| b).sum();
    let mut gone = Vec::new();
    for (p, b, _) in dumps.iter().take(dumps.len().saturating_sub(1)) {
        if total <= cap {
            break;
        }
        total -= b;
        gone.push(p.clone());
    }
    gone
}

/// The GPU dumps in `dir` ([`dumps::dumps`]) with their sizes and times.
fn dumps_in(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u64, SystemTime)> {
    dumps::dumps(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| {
            let m = std::fs::metadata(&p).ok().filter(|m| m.is_file())?;
            Some((p, m.len(), m.modified().ok()?))
        })
        .collect()
}

/// What PyTorch's NCCL watchdog prints when a collective timed out (recorded on two H200s,
/// tests/fixtures/h200/dist_two_gpu); it aborts the process soon after.
const WATCHDOG_TIMEOUT: &str = "Watchdog caught collective operation timeout";

/// Whether `line` is the NCCL watchdog's timeout report.
pub fn is_watchdog_timeout(line: &str) -> bool {
    line.contains(WATCHDOG_TIMEOUT)
}

/// The baseline as `watch` runs it (`rung::get_for` picks it when the climb watches).
pub struct Watched;

impl Rung for Watched {
    fn id(&self) -> RungId {
        RungId::Baseline
    }

    fn describe(&self) -> &'static str {
        "run the job once, armed at full speed (GPU coredump on exception, dump pipe, CPU core or \
         faulthandler; never launch-blocking), for as long as it runs; a hang's evidence is taken \
         while it runs, a fault's dumps are read after it ends"
    }

    fn answers(&self, _python: bool) -> &'static [Part] {
        &[Part::SourceLine, Part::Class]
    }

    /// The job's one run, hung or not.
    fn stands_for_baseline(&self, _hung: bool) -> bool {
        true
    }

    fn steps(&self, cx: &StepCx) -> Vec<Step> {
        steps(cx)
    }

    fn run(&self, io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
        run(io, steps)
    }
}

/// The steps of a watched run: the armed job (no time limit, never launch-blocking), the hang
/// rung's steps beside it, and the reading of its dumps.
pub fn steps(cx: &StepCx) -> Vec<Step> {
    let r = cx.recipe;
    let mut job = with_options(armed::watched(r, &cx.dir), r, RungId::Baseline);
    job.timeout = None;
    let mut steps = Vec::new();
    if !r.python {
        // A native job's launch sites from its binary: `watch` never launch-blocks.
        steps.push(sites::step(r));
    }
    steps.push(Step::target(job).at(At::New(Access::Ptrace)));
    steps.extend(hung::beside_steps(cx));
    // No abort, so no CPU core to read.
    steps.extend(dumps::reading_steps(cx).into_iter().filter(|s| s.when != When::PerCpuCore));
    steps.push(
        Step::new(Role::CudaGdb, evidence::gdb(&cx.dir.join(DUMP)), "cudagdb-{n}").when(When::PerHangDump),
    );
    steps
}

/// Why the job counts as hung now, if it does.
fn hung_now(
    after: Option<Duration>,
    silent_since: Instant,
    watchdog: bool,
    next_check: &mut Instant,
    busy: &dyn Fn() -> Option<bool>,
) -> Option<String> {
    if watchdog {
        return Some("PyTorch's NCCL watchdog reported a collective timeout".into());
    }
    let after = after?;
    let now = Instant::now();
    if now.duration_since(silent_since) < after || now < *next_check {
        return None;
    }
    *next_check = now + GPU_CHECK;
    match busy() {
        Some(false) => None,
        Some(true) => Some(format!("nothing printed for {} s while a GPU was busy", after.as_secs())),
        None => Some(format!("nothing printed for {} s (the GPUs' load could not be read)", after.as_secs())),
    }
}

/// Runs the watched job to its end (or its hang), then reads what it left.
pub fn run(io: &mut dyn RungIo, steps: &[Step]) -> Result<Ran> {
    let after = io.recipe().hang_after;
    let dir = io.dir().to_path_buf();
    // The launch sites need nothing of the job: the disassembly runs beside it.
    let side = sites::beside(io, steps);
    let started = SystemTime::now();
    let pyspy = step(steps, When::PerPythonProcess)?.clone();
    let convert = steps.iter().find(|s| s.when == When::PerNcclTrace).cloned();
    let silent_since = Cell::new(Instant::now());
    let watchdog = Cell::new(false);
    let mut next_check = Instant::now();
    let mut next_dump_check = Instant::now();
    let mut seen = hung::Seen::default();
    let ran = {
        let watch = &mut |line: &str, _: &mut dyn Beside| {
            silent_since.set(Instant::now());
            if is_watchdog_timeout(line) {
                watchdog.set(true);
            }
            Control::Continue
        };
        let tick = &mut |running: &Running, beside: &mut dyn Beside| {
            if Instant::now() >= next_dump_check {
                next_dump_check = Instant::now() + DUMP_CHECK;
                for p in over_cap(dumps_in(&dir), DUMP_CAP) {
                    if std::fs::remove_file(&p).is_ok() {
                        seen.notes.push(format!(
                            "removed the oldest dump `{}`: the job's dumps were over {} GiB",
                            p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                            DUMP_CAP >> 30
                        ));
                    }
                }
            }
            if seen.hung {
                return Control::Continue;
            }
            let busy = || beside.gpu_busy();
            let Some(why) = hung_now(after, silent_since.get(), watchdog.get(), &mut next_check, &busy)
            else {
                return Control::Continue;
            };
            seen.hung = true;
            beside.say(&format!("{why}: taking the hang's evidence"));
            seen.notes.push(format!("{HUNG_NOTE} after {} s: {why}", running.elapsed().as_secs()));
            hung::collect(&dir, running, beside, &pyspy, convert.as_ref(), &mut seen);
            if running.child_exited() {
                Control::Continue
            } else {
                Control::Stop
            }
        };
        io.execute(Run::of(step(steps, When::Always)?).watched(watch).ticked(tick).with(&side))
    };
    let (exit, exits) = (exit_of(ran.exit), ran.with);
    let then = "a fault's launch site is not known from the binary (`watch` never launch-blocks)";
    let exit = exit?;
    dumps::remove_fifos(&dir);
    for n in std::mem::take(&mut seen.notes) {
        io.note(n);
    }
    if let Some(e) = seen.error.take() {
        return Err(e);
    }
    if !seen.hung {
        let read = dumps::read_dumps(io, steps, When::PerDump, started, exit)?;
        // A job that left no dump leaves no bundle: what its binary's disassembly named (or did
        // not) is no news to the user (issue 41: it printed the objdump note).
        sites::taken(io, &side, exits, read.yielded.then_some(then))?;
        if !read.yielded && !exit.success() && !io.interrupted() && exit != Exit::Interrupted {
            io.note(dumps::no_dump_note(exit));
        }
        return Ok(Ran {
            faulted: read.faulted,
            yielded: true,
            lineinfo: None,
            hung: false,
            static_sites: None,
        });
    }
    sites::taken(io, &side, exits, Some(then))?;
    // The dumps of a hang are read with the hang rung's commands (`info cuda threads`).
    let read = dumps::read_dumps(io, steps, When::PerHangDump, started, exit)?;
    Ok(Ran { faulted: read.yielded, yielded: read.yielded, lineinfo: None, hung: true, static_sites: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_dumps_go_first_and_the_newest_stays() {
        let t = |s| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let d = |n: &str, b, s| (std::path::PathBuf::from(n), b, t(s));
        let dumps = vec![d("c", 5, 30), d("a", 5, 10), d("b", 5, 20)];
        assert!(over_cap(dumps.clone(), 15).is_empty());
        assert_eq!(over_cap(dumps.clone(), 10), [std::path::PathBuf::from("a")]);
        assert_eq!(over_cap(dumps.clone(), 1), ["a", "b"].map(std::path::PathBuf::from));
        // One dump alone over the cap is kept: it is the occurrence.
        assert!(over_cap(vec![d("x", 100, 1)], 1).is_empty());
    }

    #[test]
    fn the_watchdog_line_is_known() {
        let line = "[rank1]:[E1130 01:12:25.997042394 ProcessGroupNCCL.cpp:689] [Rank 1] Watchdog caught collective \
                    operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, \
                    Timeout(ms)=30000) ran for 30067 milliseconds before timing out.";
        assert!(is_watchdog_timeout(line));
        assert!(!is_watchdog_timeout("step 12: loss 0.31"));
    }

    #[test]
    fn a_silent_job_is_hung_only_while_a_gpu_is_busy() {
        let long_ago = Instant::now() - Duration::from_secs(100);
        let mut next = Instant::now();
        assert_eq!(hung_now(None, long_ago, false, &mut next, &|| Some(true)), None);
        assert!(hung_now(None, Instant::now(), true, &mut next, &|| Some(false))
            .unwrap()
            .contains("watchdog"));
        let after = Some(Duration::from_secs(30));
        assert_eq!(hung_now(after, Instant::now(), false, &mut next, &|| Some(true)), None);
        // Idle GPUs: a server waiting for requests; looked at again only after GPU_CHECK.
        assert_eq!(hung_now(after, long_ago, false, &mut next, &|| Some(false)), None);
        assert_eq!(hung_now(after, long_ago, false, &mut next, &|| Some(true)), None);
        let mut now = Instant::now();
        assert!(hung_now(after, long_ago, false, &mut now, &|| Some(true)).unwrap().contains("busy"));
        let mut now = Instant::now();
        assert!(hung_now(after, long_ago, false, &mut now, &|| None).unwrap().contains("could not be read"));
    }
}
