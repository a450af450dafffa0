//! `xtask::process` (the supervised runner) on real processes (`/bin/sh`, `sleep`, `yes`): output streamed to the logs
//! and to the callback, exit codes and signals, and that no process of a run's group
//! outlives it, whether it ends by itself, by timeout, by `Control::Stop`, by a panic in
//! the callback or by Ctrl-C (the last in a re-executed copy of this test binary, since
//! the signal handler is process-wide).
//!
//! The whole process tree too: a stand-in target (`tests/standins/escaper`) double-forks a
//! grandchild that calls `setsid()` and ignores SIGTERM; through the API and through the
//! real binary (a subreaper), after a normal end, a timeout, a Stop, Ctrl-C and SIGTERM, no
//! process holding the test's marker (argv or environment, read in /proc) is left, and the
//! binary names the signal (130 and `interrupted (Ctrl-C)`, 143 and `interrupted
//! (SIGTERM)`). A signal while doctor waits on a probe that does not answer
//! (`tests/standins/slow/nvcc`) kills the probe. A target that floods stderr has its log
//! capped (`DEBUG_IMA_LOG_CAP`), head and tail kept, redacted, and the cut noted.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use xtask::process::{self as exec, Control, Exit, Interrupt, Spec, Stream, MAX_LINE};

use crate::support;
use crate::support::alive;

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("exec").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `sh -c SCRIPT` logging to DIR/out.log and DIR/err.log.
fn sh(dir: &Path, script: &str) -> Spec {
    Spec::new("/bin/sh", ["-c", script], dir.join("out.log"), dir.join("err.log"))
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Waits (generously) for every pid to be dead; SIGKILL is asynchronous.
fn assert_dead(pids: &[i32]) {
    let start = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        assert!(start.elapsed() < Duration::from_secs(60), "still alive: {pids:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `spec`, collecting every line the callback got.
fn run_collect(spec: &Spec) -> (exec::Outcome, Vec<(Stream, String)>) {
    let mut lines = Vec::new();
    let outcome = exec::run(spec, &mut |s, l| {
        lines.push((s, l.to_string()));
        Control::Continue
    })
    .unwrap();
    (outcome, lines)
}

fn pids_of(lines: &[(Stream, String)], n: usize) -> Vec<i32> {
    let pids: Vec<i32> = lines.iter().filter_map(|(_, l)| l.parse().ok()).take(n).collect();
    assert_eq!(pids.len(), n, "{lines:?}");
    pids
}

#[test]
fn output_goes_to_the_logs_and_lines_to_the_callback_in_order() {
    let dir = scratch("order");
    let script = r#"i=0; while [ $i -lt 300 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done
                    printf 'no newline at the end'"#;
    let (outcome, lines) = run_collect(&sh(&dir, script));
    assert_eq!(outcome.exit, Exit::Code(0));
    assert!(outcome.pid > 0);
    assert_eq!(outcome.lines_dropped, 0);
    assert!(!outcome.output_abandoned);

    let expect = |what: &str| -> Vec<String> { (0..300).map(|i| format!("{what} {i}")).collect() };
    let mut out_expected = expect("out");
    out_expected.push("no newline at the end".into());
    let got = |stream| -> Vec<String> {
        lines.iter().filter(|(s, _)| *s == stream).map(|(_, l)| l.clone()).collect()
    };
    assert_eq!(got(Stream::Stdout), out_expected);
    assert_eq!(got(Stream::Stderr), expect("err"));

    assert_eq!(read(dir.join("out.log")), expect("out").join("\n") + "\nno newline at the end");
    assert_eq!(read(dir.join("err.log")), expect("err").join("\n") + "\n");
}

#[test]
fn environment_and_working_directory() {
    let dir = scratch("env");
    let mut spec = sh(&dir, r#"echo "${HOME-unset} $XTASK_EXEC_TEST"; pwd -P"#);
    spec.env_remove = vec!["HOME".into(), "XTASK_EXEC_TEST".into()];
    spec.env_set = vec![("XTASK_EXEC_TEST".into(), "set".into())];
    spec.cwd = Some(dir.clone());
    spec.stdout_log = dir.join("logs/deeper/out.log");
    let (outcome, lines) = run_collect(&spec);
    assert_eq!(outcome.exit, Exit::Code(0));
    let text: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(text, ["unset set", dir.canonicalize().unwrap().to_str().unwrap()]);
    assert!(dir.join("logs/deeper/out.log").is_file());
}

#[test]
fn one_log_for_both_streams() {
    let dir = scratch("one-log");
    let mut spec = sh(&dir, "echo one; echo two >&2; echo three");
    spec.stderr_log = spec.stdout_log.clone();
    let (outcome, _) = run_collect(&spec);
    assert_eq!(outcome.exit, Exit::Code(0));
    let log = read(dir.join("out.log"));
    let mut got: Vec<&str> = log.lines().collect();
    got.sort();
    assert_eq!(got, ["one", "three", "two"]);
}

#[test]
fn exit_codes_and_signals() {
    let dir = scratch("exits");
    let exit = |script| run_collect(&sh(&dir, script)).0.exit;
    assert_eq!(exit("exit 3"), Exit::Code(3));
    assert_eq!(exit("kill -ABRT $$"), Exit::Signal(6));
    assert_eq!(exit("kill -KILL $$"), Exit::Signal(9));
    assert_eq!(serde_json::to_string(&Exit::Signal(6)).unwrap(), r#"{"signal":6}"#);
    assert_eq!(serde_json::to_string(&Exit::TimedOut).unwrap(), r#""timed-out""#);
}

#[test]
fn timeout_kills_the_whole_group() {
    let dir = scratch("timeout");
    let mut spec = sh(&dir, "echo $$; sleep 100 & echo $!; sleep 100");
    spec.timeout = Some(Duration::from_millis(500));
    let (outcome, lines) = run_collect(&spec);
    assert_eq!(outcome.exit, Exit::TimedOut);
    // Not before its limit; how long after depends on the machine's load: what shows the group
    // was killed is that every process of it is gone.
    assert!(outcome.duration >= Duration::from_millis(500));
    let pids = pids_of(&lines, 2);
    assert_eq!(pids[0] as u32, outcome.pid);
    assert_dead(&pids);
}

/// A timeout asks first: the group gets SIGTERM, and a target that tears down on it (torchrun
/// forwarding it to its workers) gets to finish; one that ignores it is killed after
/// `TERM_GRACE`.
#[test]
fn a_timeout_sends_sigterm_before_sigkill() {
    let dir = scratch("term");
    let mut spec = sh(&dir, "trap 'echo torn down; exit 3' TERM; echo $$; while :; do sleep 0.05; done");
    spec.timeout = Some(Duration::from_millis(300));
    let (outcome, _) = run_collect(&spec);
    assert_eq!(outcome.exit, Exit::TimedOut);
    // The callback is done once the run is ended; the log keeps what came after: the child
    // ended on SIGTERM, by its own trap (SIGKILL runs no trap).
    assert!(read(dir.join("out.log")).contains("torn down"), "{}", read(dir.join("out.log")));

    let dir = scratch("term-ignored");
    let mut spec = sh(&dir, "trap '' TERM; echo $$; while :; do sleep 0.05; done");
    spec.timeout = Some(Duration::from_millis(300));
    let start = Instant::now();
    let (outcome, lines) = run_collect(&spec);
    assert_eq!(outcome.exit, Exit::TimedOut);
    let took = start.elapsed();
    assert!(took >= exec::TERM_GRACE, "SIGKILL came only after the grace: {took:?}");
    assert_dead(&pids_of(&lines, 1));
}

#[test]
fn stop_from_the_callback_kills_a_spinning_target() {
    // The attach rung: the target announces its pid and spins; the callback works for a
    // while (cuda-gdb attached) and then stops the run.
    let dir = scratch("stop");
    let spec = sh(&dir, "echo \"waiting (PID $$)\"; sleep 100 & echo $!; while :; do :; done");
    let mut pids = Vec::new();
    let outcome = exec::run(&spec, &mut |_, line| {
        if let Some(pid) = line.strip_prefix("waiting (PID ").and_then(|r| r.strip_suffix(')')) {
            pids.push(pid.parse::<i32>().unwrap());
        } else if let Ok(pid) = line.parse() {
            pids.push(pid);
            std::thread::sleep(Duration::from_millis(300));
            assert!(alive(pids[0]), "the target must still spin while the callback works");
            return Control::Stop;
        }
        Control::Continue
    })
    .unwrap();
    assert_eq!(outcome.exit, Exit::Stopped);
    assert_eq!(pids.len(), 2);
    assert_dead(&pids);
}

#[test]
fn a_slow_callback_does_not_block_the_target() {
    let dir = scratch("slow");
    let size = 10_000_000;
    let spec = sh(&dir, &format!("yes abcdefghijklmnopqrstuvwxyz0123456789 | head -c {size}"));
    let mut first = true;
    let mut got = 0u64;
    let log = dir.join("out.log");
    let outcome = exec::run(&spec, &mut |stream, line| {
        assert_eq!(stream, Stream::Stdout);
        if first {
            // The callback holds on to its first line until the target has written everything
            // to its log: were the target blocked by the callback, it never would (no clock
            // decides: the limit only ends a deadlock).
            let until = Instant::now() + Duration::from_secs(120);
            while std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0) < size as u64 {
                assert!(Instant::now() < until, "the target is blocked while the callback works");
                std::thread::sleep(Duration::from_millis(20));
            }
            first = false;
        }
        got += 1;
        // The last line may be cut short by `head`.
        assert!("abcdefghijklmnopqrstuvwxyz0123456789".starts_with(line), "{line:?}");
        Control::Continue
    })
    .unwrap();
    assert_eq!(outcome.exit, Exit::Code(0));
    let lines = (size as u64).div_ceil(37);
    assert_eq!(got + outcome.lines_dropped, lines);
    assert_eq!(std::fs::metadata(dir.join("out.log")).unwrap().len(), size as u64);
}

#[test]
fn a_grandchild_holding_the_pipe_is_killed_when_the_child_exits() {
    let dir = scratch("grandchild");
    let (outcome, lines) = run_collect(&sh(&dir, "sleep 30 & echo $!; exit 4"));
    assert_eq!(outcome.exit, Exit::Code(4));
    // Killed, not waited for: its pipe closed by its death, not abandoned after a grace.
    assert!(!outcome.output_abandoned);
    assert_dead(&pids_of(&lines, 1));
}

/// The limit of a library caller (this test binary is no subreaper): a descendant that left
/// the group and cleared its environment (so it carries no run mark) is not found. It keeps
/// the pipes open, and its output is abandoned after a grace. The binary, a subreaper,
/// finds it too (`the_binary_kills_every_descendant_*`).
#[test]
fn an_unmarked_process_that_left_the_group_is_abandoned_after_a_grace() {
    if !Path::new("/usr/bin/setsid").exists() && !Path::new("/bin/setsid").exists() {
        return;
    }
    let dir = scratch("escaped");
    let start = Instant::now();
    // The shell exits only once the escape has happened.
    let script = "env -i PATH=/usr/bin:/bin setsid sh -c 'echo $$ > ready; exec sleep 30' &
                  while [ ! -s ready ]; do sleep 0.01; done; cat ready";
    let mut spec = sh(&dir, script);
    spec.cwd = Some(dir.clone());
    let (outcome, lines) = run_collect(&spec);
    let escaped = pids_of(&lines, 1)[0];
    let _ = kill(Pid::from_raw(escaped), Signal::SIGKILL);
    assert_eq!(outcome.exit, Exit::Code(0));
    assert!(outcome.output_abandoned);
    let took = start.elapsed();
    assert!(took >= exec::READERS_GRACE, "{took:?}");
}

#[test]
fn a_panic_in_the_callback_kills_the_group() {
    let dir = scratch("panic");
    let spec = sh(&dir, "echo $$; sleep 100 & echo $!; wait");
    let mut pids = Vec::new();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        exec::run(&spec, &mut |_, line| {
            pids.push(line.parse::<i32>().unwrap());
            if pids.len() == 2 {
                panic!("the callback failed");
            }
            Control::Continue
        })
    }));
    assert!(result.is_err());
    assert_dead(&pids);
}

#[test]
fn long_lines_are_cut_for_the_callback_only() {
    let dir = scratch("long");
    let script = "head -c 200000 /dev/zero | tr '\\0' a; echo; echo short";
    let (outcome, lines) = run_collect(&sh(&dir, script));
    assert_eq!(outcome.exit, Exit::Code(0));
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].1, "a".repeat(MAX_LINE));
    assert_eq!(lines[1].1, "short");
    assert_eq!(read(dir.join("out.log")), "a".repeat(200_000) + "\nshort\n");
}

#[test]
fn invalid_utf8_and_crlf_reach_the_callback_lossily() {
    let dir = scratch("bytes");
    let (_, lines) = run_collect(&sh(&dir, r"printf 'a\377b\r\nc\n'"));
    let text: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(text, ["a\u{fffd}b", "c"]);
    assert_eq!(std::fs::read(dir.join("out.log")).unwrap(), b"a\xffb\r\nc\n");
}

#[test]
fn a_missing_program_is_named() {
    let dir = scratch("missing");
    let spec = Spec::new("no-such-tool-xtask", ["--version"], dir.join("o"), dir.join("e"));
    let err = format!("{:#}", exec::run(&spec, &mut |_, _| Control::Continue).unwrap_err());
    assert!(err.contains("`no-such-tool-xtask`") && err.contains("PATH"), "{err}");

    let spec = Spec::new("./no/such/tool", Vec::<String>::new(), dir.join("o"), dir.join("e"));
    let err = format!("{:#}", exec::run(&spec, &mut |_, _| Control::Continue).unwrap_err());
    assert!(err.contains("`./no/such/tool`") && err.contains("no such file"), "{err}");

    let mut spec = sh(&dir, "true");
    spec.cwd = Some(dir.join("nowhere"));
    let err = format!("{:#}", exec::run(&spec, &mut |_, _| Control::Continue).unwrap_err());
    assert!(err.contains("working directory") && err.contains("nowhere"), "{err}");
}

// -- Ctrl-C: the flag is process-wide, so these run in a copy of this binary. ----------

const CHILD_ENV: &str = "XTASK_EXEC_INTERRUPT_CHILD";

/// Runs `interrupt_child` in a copy of this binary in MODE; sends it SIGINT once the
/// target is ready (twice, 200 ms apart, when `twice`), and returns its stdout lines.
fn interrupt_copy(mode: &str, twice: bool) -> Vec<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg(support::test_name(module_path!(), "interrupt_child"))
        .args(["--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mode)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let copy = Pid::from_raw(child.id() as i32);
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        // libtest may print `test [exec::]interrupt_child ... ` before the first line.
        if line.ends_with("line: ready") {
            kill(copy, Signal::SIGINT).unwrap();
            if twice {
                std::thread::sleep(Duration::from_millis(200));
                kill(copy, Signal::SIGINT).unwrap();
            }
        }
        lines.push(line);
    }
    assert!(child.wait().unwrap().success(), "{lines:#?}");
    lines
}

fn target_pids(lines: &[String]) -> Vec<i32> {
    lines.iter().filter_map(|l| l.rsplit_once("line: ")?.1.parse().ok()).collect()
}

#[test]
fn interrupt_kills_the_group_and_later_runs_start_nothing() {
    let lines = interrupt_copy("once", false);
    assert!(lines.contains(&"exit: Interrupted".to_string()), "{lines:#?}");
    assert!(lines.contains(&"after: Interrupted pid 0".to_string()), "{lines:#?}");
    let pids = target_pids(&lines);
    assert_eq!(pids.len(), 2, "{lines:#?}");
    assert_dead(&pids);
}

#[test]
fn a_second_interrupt_kills_at_once_even_inside_the_callback() {
    let lines = interrupt_copy("twice", true);
    assert!(lines.contains(&"died in the callback: true".to_string()), "{lines:#?}");
    assert!(lines.contains(&"exit: Interrupted".to_string()), "{lines:#?}");
    assert_dead(&target_pids(&lines));
}

/// The copy's side; does nothing in a normal test run.
#[test]
fn interrupt_child() {
    let Ok(mode) = std::env::var(CHILD_ENV) else { return };
    Interrupt::install().unwrap();
    Interrupt::install().unwrap();
    let dir = scratch(&format!("interrupt-{mode}"));
    let mut spec = sh(&dir, "echo $$; sleep 100 & echo $!; echo ready; wait");
    spec.timeout = Some(Duration::from_secs(20));
    let mut pids = Vec::new();
    let outcome = exec::run(&spec, &mut |_, line| {
        println!("line: {line}");
        if let Ok(pid) = line.parse::<i32>() {
            pids.push(pid);
        }
        if line == "ready" && mode == "twice" {
            // Busy in the callback (cuda-gdb attached): only the second signal can help.
            let start = Instant::now();
            while pids.iter().any(|&p| alive(p)) && start.elapsed() < Duration::from_secs(8) {
                std::thread::sleep(Duration::from_millis(20));
            }
            println!("died in the callback: {}", !pids.iter().any(|&p| alive(p)));
        }
        Control::Continue
    })
    .unwrap();
    println!("exit: {:?}", outcome.exit);
    assert!(Interrupt::default().is_set());
    let after = exec::run(&sh(&dir, "echo never"), &mut |_, _| Control::Continue).unwrap();
    println!("after: {:?} pid {}", after.exit, after.pid);
}

/// With `redact`, secrets never reach the logs: not when a token arrives in two writes, not
/// in a last line without a newline, not on stderr; bytes that are not UTF-8 on a line
/// without a secret are kept as they were, and the outcome counts what was taken out.
#[test]
fn redacting_logs_keep_no_secret_and_count_what_was_taken_out() {
    let dir = scratch("redact");
    // Built at run time so that no token-shaped literal sits in the source.
    let hf = format!("hf_{}", "aB3dE6".repeat(6));
    let ghp_head = "ghp_".to_string() + &"x9Y".repeat(6);
    let ghp_tail = "Q7r".repeat(6);
    let sk = format!("sk-{}", "Fk9z".repeat(12));
    let bearer = format!("tok{}", "En5".repeat(6));
    let script = format!(
        "echo 'loading with {hf}'\n\
         printf 'split {ghp_head}'; sleep 0.2; printf '{ghp_tail} end\\n'\n\
         printf 'raw \\377\\376 bytes\\n'\n\
         echo 'Authorization: Bearer {bearer}' >&2\n\
         printf 'last {sk}'"
    );
    let mut spec = sh(&dir, &script);
    spec.redact = true;
    let (outcome, _) = run_collect(&spec);
    assert_eq!(outcome.exit, Exit::Code(0));
    let out = std::fs::read(dir.join("out.log")).unwrap();
    let err = std::fs::read(dir.join("err.log")).unwrap();
    let both = [out.clone(), err.clone()].concat();
    let text = String::from_utf8_lossy(&both);
    for secret in [&hf, &ghp_head, &ghp_tail, &sk, &bearer] {
        assert!(!text.contains(secret.as_str()), "{secret} leaked: {text}");
    }
    assert!(text.contains("loading with hf_[REDACTED]\n"), "{text}");
    assert!(text.contains("split ghp_[REDACTED] end\n"), "{text}");
    assert!(String::from_utf8_lossy(&out).ends_with("last sk-[REDACTED]"), "no newline added: {text}");
    assert_eq!(String::from_utf8_lossy(&err), "Authorization: [REDACTED]\n");
    // A line without a secret is written byte for byte.
    assert!(out.windows(12).any(|w| w == b"raw \xff\xfe bytes"), "{text}");
    assert_eq!(
        outcome.redacted,
        [
            (Stream::Stdout, "GitHub token", 1),
            (Stream::Stdout, "hf_ token", 1),
            (Stream::Stdout, "sk- API key", 1),
            (Stream::Stderr, "Authorization header", 1),
            (Stream::Stderr, "bearer token", 1),
        ]
    );

    // Without `redact`, the same run logs every byte as it came.
    let (_, _) = run_collect(&sh(&dir, &script));
    assert!(String::from_utf8_lossy(&std::fs::read(dir.join("out.log")).unwrap()).contains(&hf));
}

// -- The whole process tree: descendants that call setsid() and ignore SIGTERM. ---------

/// A word no other process on the machine has in its argv or environment.
fn unique_mark(name: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    format!("{name}{}x{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed))
}

/// The live processes whose argv or environment holds `mark`.
fn holding(mark: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found: Vec<i32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me && alive(pid))
        .filter(|pid| {
            ["cmdline", "environ"].iter().any(|f| {
                std::fs::read(format!("/proc/{pid}/{f}"))
                    .is_ok_and(|b| b.windows(mark.len()).any(|w| w == mark.as_bytes()))
            })
        })
        .collect();
    found.sort_unstable();
    found
}

/// Waits (generously) until no live process holds `mark`; on failure kills them and panics.
fn assert_none_left(mark: &str, what: &str) {
    let start = Instant::now();
    loop {
        let left = holding(mark);
        if left.is_empty() {
            return;
        }
        if start.elapsed() > Duration::from_secs(5) {
            for &p in &left {
                let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
            }
            panic!("{what}: left running: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The escaper stand-in, run through the API (`ESCAPER_THEN`), its pids in DIR/pids.
fn escaper(dir: &Path, then: &str, mark: &str) -> Spec {
    let mut spec = Spec::new(
        support::standins().join("escaper"),
        Vec::<String>::new(),
        dir.join("out.log"),
        dir.join("err.log"),
    );
    spec.env_set = vec![
        ("ESCAPER_THEN".into(), then.into()),
        ("ESCAPER_MARK".into(), mark.into()),
        ("ESCAPER_PIDS".into(), dir.join("pids").display().to_string()),
    ];
    spec
}

fn escapee_of(dir: &Path) -> i32 {
    let text = std::fs::read_to_string(dir.join("pids")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("escapee ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no escapee in {text:?}"))
}

#[test]
fn a_setsid_grandchild_is_killed_when_the_target_ends() {
    let dir = scratch("tree-end");
    let mark = unique_mark("treeend");
    let (outcome, _) = run_collect(&escaper(&dir, "exit", &mark));
    assert_eq!(outcome.exit, Exit::Code(0));
    // Its pipes were closed by its death, not abandoned after a grace (what `output_abandoned`
    // says; how long the run took depends on the machine's load, not on this).
    assert!(!outcome.output_abandoned);
    // Checked by the marker first: on failure, that kills what was left.
    assert_none_left(&mark, "after a normal end");
    assert_dead(&[escapee_of(&dir)]);
}

#[test]
fn a_setsid_grandchild_that_ignores_sigterm_is_killed_after_a_timeout() {
    let dir = scratch("tree-timeout");
    let mark = unique_mark("treetimeout");
    let mut spec = escaper(&dir, "hang", &mark);
    spec.timeout = Some(Duration::from_millis(500));
    let start = Instant::now();
    let (outcome, _) = run_collect(&spec);
    assert_eq!(outcome.exit, Exit::TimedOut);
    // The tree was asked first: SIGKILL only after the grace, which the grandchild ignoring
    // SIGTERM used up.
    let took = start.elapsed();
    assert!(took >= exec::TERM_GRACE, "{took:?}");
    // Checked by the marker first: on failure, that kills what was left.
    assert_none_left(&mark, "after a timeout");
    assert_dead(&[escapee_of(&dir)]);
}

#[test]
fn a_setsid_grandchild_is_killed_on_stop() {
    let dir = scratch("tree-stop");
    let mark = unique_mark("treestop");
    let outcome = exec::run(&escaper(&dir, "hang", &mark), &mut |_, line| {
        if line == "hanging" {
            Control::Stop
        } else {
            Control::Continue
        }
    })
    .unwrap();
    assert_eq!(outcome.exit, Exit::Stopped);
    // Checked by the marker first: on failure, that kills what was left.
    assert_none_left(&mark, "after Control::Stop");
    assert_dead(&[escapee_of(&dir)]);
}

/// A recipe that runs the escaper stand-in (on PATH with the other stand-ins).
fn escaper_recipe(s: &support::Scratch, timeout_s: u32) -> PathBuf {
    let p = s.path("recipe.yaml");
    std::fs::write(
        &p,
        format!(
            "version: 1\nname: escaper\ndescription: \"a target whose grandchild leaves its process group\"\n\
             run:\n  command: [\"escaper\"]\n  timeout: {timeout_s}\n"
        ),
    )
    .unwrap();
    p
}

/// How the binary's run of the escaper ends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    Normal,
    Timeout,
    Signal(Signal),
}

/// `debug-ima --rungs baseline` on the escaper, ended as `ending` says; `scrub` clears the
/// grandchild's environment (it carries no run mark: only the subreaper finds it). Returns
/// the scratch folder (kept while it lives), the run's output and the bundle's manifest.
fn escape_through_the_binary(
    name: &str,
    ending: Ending,
    scrub: bool,
) -> (support::Scratch, support::run::Output, serde_yaml::Value) {
    let s = support::Scratch::create("exec", name);
    let mark = unique_mark(name);
    let recipe = escaper_recipe(&s, if ending == Ending::Timeout { 1 } else { 30 });
    let then = if ending == Ending::Normal { "exit" } else { "hang" };
    let pids = s.path("escaper-pids");
    let run = support::run::Run::new(&s, &recipe, "oob_write")
        .arg("--rungs")
        .arg("baseline")
        .env("ESCAPER_THEN", then)
        .env("ESCAPER_MARK", &mark)
        .env("ESCAPER_PIDS", &pids.display().to_string())
        .env("ESCAPER_SCRUB", if scrub { "1" } else { "0" });
    let start = Instant::now();
    let child = run.spawn();
    if let Ending::Signal(sig) = ending {
        let running = {
            let until = Instant::now() + Duration::from_secs(30);
            loop {
                let text = std::fs::read_to_string(&pids).unwrap_or_default();
                if text.contains("escapee ") {
                    break true;
                }
                if Instant::now() > until {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        let xtask = Pid::from_raw(child.id() as i32);
        if !running {
            let _ = kill(xtask, Signal::SIGKILL);
        }
        assert!(running, "the escaper did not start");
        std::thread::sleep(Duration::from_millis(200));
        kill(xtask, sig).unwrap();
    }
    let out = run.finish(child, start);
    // The tool is gone: nothing it started is left, the grandchild included.
    assert_none_left(&mark, &format!("{name}: after the tool ended\n{}", out.both()));
    let manifest = s.only_bundle().manifest();
    (s, out, manifest)
}

#[test]
fn the_binary_kills_every_descendant_after_a_normal_end() {
    for scrub in [false, true] {
        let (s, out, _) = escape_through_the_binary(&format!("bin-end-{scrub}"), Ending::Normal, scrub);
        assert_eq!(out.code(), Some(0), "{}", out.both());
        assert_eq!(s.only_bundle().exit_of("baseline", "target"), "code 0");
    }
}

#[test]
fn the_binary_kills_every_descendant_after_a_timeout() {
    let (_s, out, m) = escape_through_the_binary("bin-timeout", Ending::Timeout, true);
    assert_eq!(out.code(), Some(0), "{}", out.both());
    // At its limit the armed run is looked at as hung (no CUDA process: nothing to dump), then
    // ended with everything it started.
    let notes = format!("{:?}", m["rungs"][0]["notes"]);
    assert!(notes.contains("still running at its time limit (1 s)"), "{notes}");
}

#[test]
fn the_binary_kills_every_descendant_on_ctrl_c_and_says_so() {
    let (_s, out, m) = escape_through_the_binary("bin-sigint", Ending::Signal(Signal::SIGINT), false);
    assert_eq!(out.code(), Some(130), "{}", out.both());
    let stopped = m["stopped"].as_str().unwrap();
    assert!(stopped.starts_with("interrupted (Ctrl-C)"), "{stopped}");
    assert!(out.stdout.contains("stopped: interrupted (Ctrl-C)"), "{}", out.both());
}

#[test]
fn the_binary_kills_every_descendant_on_sigterm_and_says_so() {
    let (_s, out, m) = escape_through_the_binary("bin-sigterm", Ending::Signal(Signal::SIGTERM), true);
    assert_eq!(out.code(), Some(143), "{}", out.both());
    let stopped = m["stopped"].as_str().unwrap();
    assert!(stopped.starts_with("interrupted (SIGTERM)"), "{stopped}");
    assert!(!stopped.contains("Ctrl-C"), "{stopped}");
}

/// SIGKILL of the tool, which no handler sees, while its target and an `env -i setsid`
/// double-forked daemon it started run: the guardian ends the daemon too (issue 42: it found
/// processes by their environment only, and the daemon, which has none of the tool's, was
/// left running), and the bundle says that its run did not finish.
#[test]
fn sigkill_of_the_binary_ends_an_environment_cleared_daemon_and_the_bundle_says_unfinished() {
    let (s, out, m) = escape_through_the_binary("bin-sigkill", Ending::Signal(Signal::SIGKILL), true);
    assert_eq!(out.status.signal(), Some(9), "{}", out.both());
    assert!(m["stopped"].is_null(), "{m:?}");
    let b = s.only_bundle();
    let show = support::plant::xtask(&s.dir, "/usr/bin:/bin", &["bundle", "show", b.root.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&show.1).contains("status:   unfinished"),
        "{}",
        String::from_utf8_lossy(&show.1)
    );
}

/// SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM end the run as SIGTERM does (issue 42: they killed
/// the tool without its `stopped:` line, a sealed bundle or its processes ended): exit 128 +
/// the signal, the signal named, nothing left, the bundle finished and sealed.
#[test]
fn the_binary_ends_a_run_alike_on_every_catchable_signal() {
    let signals = [Signal::SIGQUIT, Signal::SIGUSR1, Signal::SIGUSR2, Signal::SIGALRM];
    std::thread::scope(|scope| {
        let runs: Vec<_> = signals
            .into_iter()
            .map(|sig| {
                scope.spawn(move || {
                    let (s, out, m) =
                        escape_through_the_binary(&format!("bin-{sig}"), Ending::Signal(sig), true);
                    assert_eq!(out.code(), Some(128 + sig as i32), "{sig}: {}", out.both());
                    let stopped = m["stopped"].as_str().unwrap_or_default();
                    assert!(stopped.starts_with(&format!("interrupted ({sig})")), "{sig}: {stopped}");
                    assert!(out.stdout.contains(&format!("stopped: interrupted ({sig})")), "{}", out.both());
                    assert!(s.only_bundle().exists("SHA256SUMS"), "{sig}: not sealed");
                })
            })
            .collect();
        for r in runs {
            r.join().unwrap();
        }
    });
}

/// Ctrl-C (or SIGTERM) while doctor waits on a `--version` probe that does not answer: the
/// probe, which ignores both, is killed with its group, and the tool ends by the signal.
#[test]
fn a_signal_while_doctor_waits_on_a_probe_kills_the_probe() {
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        let s = support::Scratch::create("exec", &format!("doctor-{sig}"));
        let mark = unique_mark("slowprobe");
        let pids = s.path("probe-pids");
        let slow = support::standins().join("slow");
        let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("doctor")
            .current_dir(&s.dir)
            .env("PATH", support::path_with(&[&slow, &support::standins()]))
            .env("SLOW_PROBE_PIDS", &pids)
            .env("SLOW_PROBE_MARK", &mark)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !std::fs::read_to_string(&pids).unwrap_or_default().contains("probe ") {
            if start.elapsed() > Duration::from_secs(8) {
                let _ = child.kill();
                panic!("the slow probe did not start");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // The probe noted its pid, then execs the loop whose argv holds the mark: wait for it.
        while holding(&format!("slow-probe-{mark}")).is_empty() {
            if start.elapsed() > Duration::from_secs(8) {
                let _ = child.kill();
                panic!("the probe runs");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        kill(Pid::from_raw(child.id() as i32), sig).unwrap();
        let signalled = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if signalled.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("doctor did not end on {sig}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        use std::os::unix::process::ExitStatusExt;
        // Ended by the signal, as the default action would, once the probe was killed.
        assert_eq!(status.signal(), Some(sig as i32), "{status:?}");
        assert_none_left(&format!("slow-probe-{mark}"), "the probe after the signal");
    }
}

/// A target that writes fast and a lot: the log is capped (`DEBUG_IMA_LOG_CAP`, small here),
/// its head and tail kept around a marker line, still redacted, and the rung's record says
/// how much was cut.
#[test]
fn a_flooding_target_has_its_log_capped_head_and_tail_kept() {
    let s = support::Scratch::create("exec", "flood");
    let mark = unique_mark("flood");
    let recipe = escaper_recipe(&s, 60);
    let token = format!("hf_{}", "Zq7Wk2".repeat(6));
    let run = support::run::Run::new(&s, &recipe, "oob_write")
        .arg("--rungs")
        .arg("baseline")
        .env("ESCAPER_THEN", "flood")
        .env("ESCAPER_FLOOD_MIB", "16")
        .env("ESCAPER_MARK", &mark)
        .env("ESCAPER_PIDS", &s.path("escaper-pids").display().to_string())
        .env("DEBUG_IMA_LOG_CAP", "1M")
        .env("ESCAPER_LAST", &token);
    let out = run.run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let log = std::fs::read(b.root.join("rungs/01-baseline/stderr.log")).unwrap();
    assert!(log.len() <= (1 << 20) + 512, "capped at 1 MiB: {} bytes", log.len());
    let text = String::from_utf8_lossy(&log);
    assert!(text.starts_with("00000000 "), "the head is kept: {}", &text[..80]);
    let last = text.trim_end().rsplit('\n').next().unwrap();
    assert_eq!(last, "the last line hf_[REDACTED]", "the tail is kept, redacted");
    assert!(!text.contains(&token));
    let marker = text.lines().find(|l| l.starts_with("[debug-ima] ----- ")).expect("a marker line");
    assert!(marker.contains("cut here") && marker.contains("DEBUG_IMA_LOG_CAP"), "{marker}");
    // Lines on both sides of the marker are whole.
    let after = text.split_once(marker).unwrap().1;
    assert!(after[1..].starts_with(|c: char| c.is_ascii_digit()), "{}", &after[..80]);
    let notes = b.notes("baseline");
    assert!(notes.contains("`stderr.log` was over its cap of 1 MiB"), "{notes}");
    assert!(notes.contains("cut from its middle"), "{notes}");
    assert_none_left(&mark, "after the flood");
}

// -- As the binary runs it: a subreaper (`process::init`), in a copy of this binary. ----

const SUBREAPER_ENV: &str = "XTASK_EXEC_SUBREAPER_CHILD";

/// Runs `subreaper_child` in a copy of this binary and returns its stdout lines.
fn subreaper_copy() -> Vec<String> {
    let out = Command::new(std::env::current_exe().unwrap())
        .arg(support::test_name(module_path!(), "subreaper_child"))
        .args(["--exact", "--nocapture", "--test-threads=1"])
        .env(SUBREAPER_ENV, "1")
        .output()
        .unwrap();
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect();
    assert!(out.status.success(), "{lines:#?}\n{}", String::from_utf8_lossy(&out.stderr));
    lines
}

/// In a subreaper, runs that end while others start never take a newly started child for
/// an orphan (doctor's probes run side by side: one killed by another's sweep would fail a
/// check), and an orphan that cleared its environment is killed when its run ends and reaped.
#[test]
fn a_subreaper_kills_only_orphans_and_reaps_them() {
    let lines = subreaper_copy();
    // libtest may print `test [exec::]subreaper_child ... ` before the first line.
    let has = |want: &str| lines.iter().any(|l| l.ends_with(want));
    assert!(has("side by side: every run exited 0"), "{lines:#?}");
    assert!(has("scrubbed orphan: gone"), "{lines:#?}");
    assert!(has("zombies: 0"), "{lines:#?}");
}

/// The copy's side; does nothing in a normal test run.
#[test]
fn subreaper_child() {
    if std::env::var_os(SUBREAPER_ENV).is_none() {
        return;
    }
    exec::init().unwrap();
    // Short runs on four threads at once, each ending (and sweeping) while others start.
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut bad = Vec::new();
                    for _ in 0..25 {
                        let o = exec::short::run(
                            Path::new("/bin/sh"),
                            &["-c", "exit 0"],
                            Duration::from_secs(20),
                        );
                        if o.exit != Exit::Code(0) {
                            bad.push(format!("{:?}", o.exit));
                        }
                    }
                    bad
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    if failures.is_empty() {
        println!("side by side: every run exited 0");
    } else {
        println!("side by side: {failures:?}");
    }
    // An orphan without a mark: found as the subreaper's child, killed with its run.
    let dir = scratch("subreaper-scrubbed");
    let mark = unique_mark("scrubbed");
    let mut spec = escaper(&dir, "exit", &mark);
    spec.env_set.push(("ESCAPER_SCRUB".into(), "1".into()));
    let (outcome, _) = run_collect(&spec);
    assert_eq!(outcome.exit, Exit::Code(0));
    assert!(!outcome.output_abandoned);
    let escapee = escapee_of(&dir);
    let start = Instant::now();
    while alive(escapee) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("scrubbed orphan: {}", if alive(escapee) { "alive" } else { "gone" });
    // Reaped here: no zombie child is left.
    let me = std::process::id().to_string();
    let zombies = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let rest: Vec<&str> = stat.rsplit_once(')').map_or("", |r| r.1).split_whitespace().collect();
            rest.first() == Some(&"Z") && rest.get(1) == Some(&me.as_str())
        })
        .count();
    println!("zombies: {zombies}");
    exec::end();
}
