//! The launch sites of a native target read from its binary (`ladder/rung/parts/sites.rs`): beside
//! the armed run when the executable's symbols hold kernel stubs, so that the run starts at
//! once and at full speed; before it otherwise, to decide on launch-blocking. The target is an
//! ELF executable built here whose symbols hold a kernel's host stub, as an nvcc build's do, and
//! which runs the stand-in target (tests/standins/target); objdump is the stand-in replaying
//! the H200's disassembly, or the real one.
//!
//! Must not: need nvcc or a GPU (the C compiler every Rust toolchain links with builds the
//! executable), or leave a process of the stand-ins behind.

use std::path::PathBuf;
use std::process::Command;

use crate::support::run::{target_recipe, Run};
use crate::support::{standins, Scratch};

/// An ELF executable standing in for an nvcc build of a program: its symbol table holds the
/// host stub of `scale_write` (nvcc writes one for each kernel a translation unit defines),
/// and running it runs the stand-in target with its arguments. `main` never calls the stub,
/// so the real objdump names no launch in it.
fn elf_target(s: &Scratch) -> PathBuf {
    let src = s.path("app.c");
    let target = standins().join("target");
    std::fs::write(
        &src,
        format!(
            "#include <unistd.h>\n\
             void __device_stub__Z11scale_writePfix(float *p, int n, long long k) {{ (void)p; (void)n; (void)k; }}\n\
             int main(int argc, char **argv) {{ (void)argc; execv(\"{}\", argv); return 127; }}\n",
            target.display()
        ),
    )
    .unwrap();
    let exe = s.path("app");
    let built = Command::new("cc").arg("-g").arg("-o").arg(&exe).arg(&src).output().unwrap();
    assert!(built.status.success(), "cc: {}", String::from_utf8_lossy(&built.stderr));
    exe
}

fn recipe_for(s: &Scratch, exe: &std::path::Path) -> PathBuf {
    let yaml =
        target_recipe("").replace("command: [\"target\"]", &format!("command: [\"{}\"]", exe.display()));
    assert!(yaml.contains(&exe.display().to_string()), "{yaml}");
    s.write_recipe(&yaml)
}

/// The executable's symbols hold a kernel stub: objdump runs beside the armed run (the two
/// stand-ins meet, each seeing the other running), the run is not launch-blocking, and its one
/// run gives the whole verdict, the launch line from the table the disassembly left.
#[test]
fn the_disassembly_runs_beside_the_armed_run_when_the_symbols_hold_kernel_stubs() {
    let s = Scratch::for_run("sites-beside");
    let exe = elf_target(&s);
    let recipe = recipe_for(&s, &exe);
    let out = Run::new(&s, &recipe, "oob_write")
        .env("STANDIN_OBJDUMP", "1")
        .env("STANDIN_MEET_TARGET", "1")
        .meet(2, 5)
        .run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let seen = Run::seen(&s);
    for who in ["objdump saw 2", "target saw 2"] {
        assert!(seen.iter().any(|l| l == who), "`{who}`: {seen:?}");
    }
    let b = s.only_bundle();
    assert_eq!(b.rung_dirs(), ["01-baseline", "02-memcheck"], "{}", out.both());
    let cmd = b.read("rungs/01-baseline/command.txt");
    assert!(!cmd.contains("CUDA_LAUNCH_BLOCKING"), "{cmd}");
    let notes = b.notes("baseline");
    assert!(notes.contains("the binary's symbols hold kernel stubs"), "{notes}");
    assert!(notes.contains("read beside the run"), "{notes}");
    assert!(b.read("rungs/01-baseline/launch-sites.log").contains("scale_write("));
    assert!(!b.exists("rungs/01-baseline/objdump.log"), "the disassembly is not kept");
    let v = &b.findings()["verdict"];
    let launch = &v["launch_site"];
    assert_eq!((launch["function"].as_str(), launch["line"].as_u64()), (Some("main"), Some(15)), "{v}");
    assert_eq!(launch["from"], "baseline/launch-sites", "{v}");
    assert!(out.stderr.contains("the armed run's verdict: `scale_write"), "{}", out.both());
    s.assert_no_standin_left();
}

/// The symbols promised launch sites but objdump named none (here `main` never calls the
/// stub): the armed run went at full speed, the note says so and what follows, and the
/// launch site is then sought launch-blocking, as for a kernel launched from several places.
#[test]
fn kernel_stubs_whose_launches_objdump_does_not_name_leave_the_launch_site_to_a_blocking_run() {
    let s = Scratch::for_run("sites-none");
    let exe = elf_target(&s);
    let recipe = recipe_for(&s, &exe);
    // Without STANDIN_OBJDUMP the stand-in runs the real objdump on the executable.
    let out = Run::new(&s, &recipe, "oob_write").run();
    assert_eq!(out.code(), Some(0), "{}", out.both());
    let b = s.only_bundle();
    let dirs = b.rung_dirs();
    assert_eq!(dirs[0], "01-baseline", "{}", out.both());
    assert!(!b.read("rungs/01-baseline/command.txt").contains("CUDA_LAUNCH_BLOCKING"));
    assert!(!b.exists("rungs/01-baseline/launch-sites.log"));
    let notes = b.notes("baseline");
    assert!(notes.contains("objdump named no kernel launch in"), "{notes}");
    assert!(notes.contains("went at full speed on the kernel stubs in its symbols"), "{notes}");
    // The next run of the target is launch-blocking, for the launch site.
    let blocking = dirs[1..].iter().find(|d| {
        let c = b.read(&format!("rungs/{d}/command.txt"));
        c.contains("CUDA_LAUNCH_BLOCKING=1")
    });
    assert!(blocking.is_some(), "no launch-blocking run after the full-speed one: {dirs:?}\n{}", out.both());
    s.assert_no_standin_left();
}
