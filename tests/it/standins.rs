//! The stand-ins answer only what they are asked (issue 41): the cuda-gdb stand-in replays a
//! recording kept per command (tests/fixtures/h200/trap, from the H200's readings of one trap's
//! dump, tests/fixtures/h200/kinds-pc/trap) for the `-ex` commands it is given and nothing
//! else, so that a command the tool stops giving is missing from what it reads, as with the
//! real cuda-gdb. Before, it replayed a whole log whatever the commands, and dropping `x/2i
//! $pc-16` (which finds a trap's own line) from the tool's command line passed every test.
//!
//! Must not: write into the fixtures or need a GPU.

use crate::support;

use std::process::Command;

use support::run::{target_recipe, Run};
use support::{fixture, standins, Scratch};

/// The stand-in cuda-gdb on a dump of the trap recording with `commands` after `target
/// cudacore`: what it printed (stdout and stderr).
fn gdb_on_trap(s: &Scratch, commands: &[&str]) -> String {
    let dump = s.path("core_vm.1.2");
    std::fs::write(&dump, "stand-in dump\n").unwrap();
    let mut cmd = Command::new(standins().join("cuda-gdb"));
    cmd.args(["-batch", "-nx", "-ex", "set pagination off", "-ex"])
        .arg(format!("target cudacore {}", dump.display()))
        .env("STANDIN_CASE", fixture("trap"));
    for c in commands {
        cmd.args(["-ex", c]);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn the_cuda_gdb_stand_in_answers_only_the_commands_it_is_given() {
    let s = Scratch::for_run("gdb-commands");
    let all =
        gdb_on_trap(&s, &["info cuda kernels", "bt", "x/i $errorpc", "x/2i $pc-16", "info line *($pc-16)"]);
    assert!(all.contains(&format!("Opening GPU coredump: {}", s.path("core_vm.1.2").display())), "{all}");
    assert!(all.contains("BPT.TRAP 0x1") && all.contains("Line 10 of"), "{all}");
    assert!(all.contains("value is not available"), "{all}");
    // Without the two commands around the PC, neither the trap nor its line.
    let fewer = gdb_on_trap(&s, &["info cuda kernels", "bt", "x/i $errorpc"]);
    assert!(!fewer.contains("BPT.TRAP") && !fewer.contains("Line 10 of"), "{fewer}");
    assert!(fewer.contains("lookup()") && fewer.contains("#0  lookup"), "{fewer}");
    // Only the dump opened: the focus and the frame `target cudacore` prints, nothing else.
    let none = gdb_on_trap(&s, &[]);
    assert!(none.contains("Program terminated with signal SIGTRAP"), "{none}");
    assert!(!none.contains("Kernel Parent") && !none.contains("value is not available"), "{none}");
    // In the order given.
    let swapped = gdb_on_trap(&s, &["info line *($pc-16)", "x/2i $pc-16"]);
    assert!(swapped.find("Line 10 of").unwrap() < swapped.find("BPT.TRAP").unwrap(), "{swapped}");
}

/// The tool's own reading of a trap's dump, on the per-command recording: the verdict names the
/// trap's line (trap.cu:10), which only `x/2i $pc-16` and `info line *($pc-16)` give (`bt`
/// names the next line, 11). Dropping either from the tool's cuda-gdb command line fails here.
#[test]
fn a_trap_s_line_comes_from_the_commands_the_tool_gives_cuda_gdb() {
    let s = Scratch::for_run("trap-commands");
    let recipe = s.write_recipe(&target_recipe(""));
    let out = Run::new(&s, &recipe, "trap").arg("--rungs").arg("baseline").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    assert!(
        out.stdout.contains("verdict: trap in `lookup") && out.stdout.contains("trap.cu:10"),
        "{}",
        out.both()
    );
    let b = s.only_bundle();
    let gdb: Vec<String> = b
        .files_in("rungs/01-baseline")
        .into_iter()
        .filter(|f| f.starts_with("cudagdb-") && f.ends_with(".log"))
        .collect();
    assert_eq!(gdb.len(), 1, "{:?}", b.files_in("rungs/01-baseline"));
    let log = b.read(&format!("rungs/01-baseline/{}", gdb[0]));
    assert!(log.contains("BPT.TRAP 0x1") && log.contains("Line 10 of"), "{log}");
    s.assert_no_standin_left();
}
