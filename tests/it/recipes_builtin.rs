//! The built-in `pytorch` and `vllm` recipes and what they brought to the format: the
//! commands and environment they resolve to, the built-in variables the ladder supplies
//! (`{gpu_arch}`, `{max_jobs}`), `env_remove` and `collect` with their validation, and the
//! vLLM plan as `debug-ima --dry-run` prints it (vLLM cannot be installed on the GPU
//! machine, so its plan is what CI checks). The pytorch recipe's whole ladder on the
//! stand-ins is in tests/it/ladder.rs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use xtask::ladder::{collect, rung as rungs};
use xtask::recipe::{
    check_recipe, max_jobs, parse, resolve_in, resolve_in_with, uses_variable, RecipeSource,
    GPU_ARCH_UNKNOWN, MAX_JOBS_UNKNOWN,
};

use crate::support;
use crate::support::recipes::{builtin, err, sets as map, strings, CWD, MINIMAL};

// ---- the built-in variables the ladder supplies ------------------------------------------

#[test]
fn max_jobs_is_bounded_by_cores_and_memory() {
    const GIB: u64 = 1 << 30;
    assert_eq!(max_jobs(16, Some(128 * GIB)), 16);
    assert_eq!(max_jobs(128, Some(64 * GIB)), 16);
    assert_eq!(max_jobs(8, Some(7 * GIB)), 1);
    assert_eq!(max_jobs(8, Some(0)), 1);
    assert_eq!(max_jobs(0, Some(64 * GIB)), 1);
    assert_eq!(max_jobs(12, None), 12);
}

#[test]
fn supplied_builtins_fill_the_recipe_and_placeholders_stand_in() {
    let text = format!(
        "{MINIMAL}  env: {{ ARCH: \"{{gpu_arch}}\", JOBS: \"{{max_jobs}}\" }}\nvariables:\n  \
         jobs: {{ default: \"-j{{max_jobs}}\" }}\n"
    )
    .replace("run:\n  command: [\"./a\"]\n", "run:\n  command: [\"./a\", \"{jobs}\"]\n");
    let r = parse(&text, RecipeSource::File("x.yaml".into()), PathBuf::from("/repo")).unwrap();
    assert!(uses_variable(&r, "gpu_arch") && uses_variable(&r, "max_jobs"));
    assert!(!uses_variable(&r, "cwd"));

    let res = resolve_in_with(
        &r,
        &BTreeMap::new(),
        Path::new(CWD),
        &map(&[("gpu_arch", "9.0"), ("max_jobs", "12")]),
    )
    .unwrap();
    assert_eq!(res.run.env["ARCH"], "9.0");
    assert_eq!(res.run.env["JOBS"], "12");
    assert_eq!(res.run.argv, strings(&["/work/proj/a", "-j12"]));
    assert_eq!(res.vars["gpu_arch"], "9.0");

    // Nothing supplied (`recipe show`, a dry run without a GPU): the placeholders.
    let res = resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap();
    assert_eq!(res.run.env["ARCH"], GPU_ARCH_UNKNOWN);
    assert_eq!(res.run.env["JOBS"], MAX_JOBS_UNKNOWN);

    // Only those two can be supplied; they cannot be declared or set.
    let e = resolve_in_with(&r, &BTreeMap::new(), Path::new(CWD), &map(&[("cwd", "/x")])).unwrap_err();
    assert!(format!("{e:#}").contains("`cwd` is not a built-in variable a caller can supply"), "{e:#}");
    let e = err(&format!("{MINIMAL}variables:\n  gpu_arch: {{ default: \"8.0\" }}\n"));
    assert!(e.contains("`gpu_arch` is a built-in variable; choose another name"), "{e}");
    let e = err("version: 1\nname: x\ndescription: d\nrun:\n  command: [\"./a\", \"{gpu_arc}\"]\n");
    assert!(e.contains("(built in: `{recipe_dir}`, `{cwd}`, `{gpu_arch}`, `{max_jobs}`)"), "{e}");
}

// ---- env_remove and collect: the format --------------------------------------------------

#[test]
fn env_remove_is_applied_and_validated() {
    let text = format!("{MINIMAL}  env_remove: [VLLM_USE_PRECOMPILED, PYTHONPATH]\n");
    let r = parse(&text, RecipeSource::File("x.yaml".into()), PathBuf::from("/repo")).unwrap();
    let res = resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap();
    assert_eq!(res.run.env_remove, strings(&["VLLM_USE_PRECOMPILED", "PYTHONPATH"]));
    // Every rung's run of the target removes them.
    let inv = rungs::baseline::invocation(&res, Path::new("/b/rungs/01-baseline"), true);
    assert!(inv
        .shell_line()
        .starts_with("env -u VLLM_USE_PRECOMPILED -u PYTHONPATH -u TRITON_DISABLE_LINE_INFO"));
    // A rung that sets one of them wins (the rung's env is the more specific).
    let text = format!("{text}rungs:\n  memcheck: {{ env: {{ PYTHONPATH: /x }} }}\n");
    let r = parse(&text, RecipeSource::File("x.yaml".into()), PathBuf::from("/repo")).unwrap();
    let res = resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap();
    let inv = rungs::memcheck::invocation(&res, Path::new("/b/memcheck.xml"));
    assert!(inv.env_set.contains(&("PYTHONPATH".to_string(), "/x".to_string())));
    assert!(!inv.env_remove.contains(&"PYTHONPATH".to_string()));

    let e = err(&format!("{MINIMAL}  env_remove: [A, B, A]\n"));
    assert!(e.starts_with("recipes/x.yaml:6:"), "{e}");
    assert!(e.contains("`A` is listed twice"), "{e}");
    let e = err(&format!("{MINIMAL}  env_remove: [\"NOT-A-NAME\"]\n"));
    assert!(
        e.starts_with("recipes/x.yaml:6:16: run.env_remove[0]: invalid environment variable name"),
        "{e}"
    );
    let e = err(&format!("{MINIMAL}  env_remove: A\n"));
    assert!(
        e.contains(
            "run.env_remove: invalid type: string \"A\", expected a list of environment variable names"
        ),
        "{e}"
    );
    let e = err(&format!("{MINIMAL}  env: {{ A: x }}\n  env_remove: [A]\n"));
    assert!(e.contains("`A` is both in `run.env` and in `run.env_remove`"), "{e}");
    let e = err(&format!("{MINIMAL}build:\n  command: make\n  env_remove: [\"{{x}}\"]\n"));
    assert!(e.contains("build.env_remove[0]: invalid environment variable name"), "{e}");
}

#[test]
fn collect_entries_resolve_and_are_validated() {
    let text = format!(
        "{MINIMAL}  cwd: sub\n  env: {{ PYTHONPATH: /p }}\nvariables:\n  py: {{ default: python3 }}\n\
         collect:\n  - {{ name: torch-env.txt, command: \"{{py}} -m torch.utils.collect_env\" }}\n  \
         - {{ name: smi.txt, command: [\"./tools/smi\", \"-q\"], timeout: 10 }}\n"
    );
    let r = parse(&text, RecipeSource::File("x.yaml".into()), PathBuf::from("/repo")).unwrap();
    let res = resolve_in(&r, &BTreeMap::new(), Path::new(CWD)).unwrap();
    assert_eq!(res.collect.len(), 2);
    assert_eq!(res.collect[0].name, "torch-env.txt");
    assert_eq!(res.collect[0].argv, strings(&["python3", "-m", "torch.utils.collect_env"]));
    assert_eq!(res.collect[0].timeout, Duration::from_secs(120));
    // A program given with a `/` is taken from the run step's directory, like the run's.
    assert_eq!(res.collect[1].argv, strings(&["/work/proj/sub/tools/smi", "-q"]));
    assert_eq!(res.collect[1].timeout, Duration::from_secs(10));
    // It runs where the target runs, with its environment.
    let inv = collect::invocation(&res, &res.collect[0]);
    assert_eq!(inv.cwd.as_deref(), Some(Path::new("/work/proj/sub")));
    assert_eq!(inv.env_set, vec![("PYTHONPATH".to_string(), "/p".to_string())]);
    assert_eq!(inv.timeout, Some(Duration::from_secs(120)));
    let check = check_recipe(&r, Path::new(CWD)).unwrap();
    assert!(check.contains("  collect: env/torch-env.txt: \"{py} -m torch.utils.collect_env\"\n"), "{check}");
    // The manifest records them.
    let json = serde_json::to_value(&res).unwrap();
    assert_eq!(json["collect"][1]["timeout"], 10);

    for (entry, want) in [
        ("{ name: ../x.txt, command: a }", "invalid collect name `../x.txt`"),
        ("{ name: doctor.txt, command: a }", "`doctor.txt` is doctor's report"),
        ("{ name: a.txt, command: \"\" }", "the command is empty"),
        ("{ name: a.txt }", "missing field `command`"),
        (
            "{ name: a.txt, command: a, env: {} }",
            "unknown field `env`, expected one of `name`, `command`, `timeout`",
        ),
        ("{ name: a.txt, command: \"{nope}\" }", "unknown variable `{nope}`"),
        ("{ name: a.txt, command: \"a | b\" }", "`|` is shell syntax"),
    ] {
        let e = err(&format!("{MINIMAL}collect:\n  - {entry}\n"));
        assert!(e.starts_with("recipes/x.yaml:7:"), "{entry}: {e}");
        assert!(e.contains(want), "{entry}: {e}");
    }
    let e = err(&format!(
        "{MINIMAL}collect:\n  - {{ name: a.txt, command: a }}\n  - {{ name: a.txt, command: b }}\n"
    ));
    assert!(e.contains("two `collect` entries are named `a.txt`"), "{e}");
    let e = err(&format!("{MINIMAL}collect: vllm collect-env\n"));
    assert!(e.contains("expected a list of mappings with `name` and `command`"), "{e}");
}

// ---- the pytorch recipe ----------------------------------------------------------------------

#[test]
fn pytorch_runs_a_script_or_a_module_under_an_optional_launcher() {
    let r = builtin("pytorch");
    assert!(r.python);
    assert_eq!(r.required_variables(), ["script"]);
    assert!(r.build.is_none());

    let res = resolve_in(&r, &map(&[("script", "repro.py"), ("args", "--steps 3")]), Path::new(CWD)).unwrap();
    assert_eq!(res.run.argv, strings(&["python3", "repro.py", "--steps", "3"]));
    assert_eq!(res.run.timeout, Some(Duration::from_secs(900)));
    assert_eq!(res.collect[0].name, "torch-collect-env.txt");
    assert_eq!(res.collect[0].argv, strings(&["python3", "-m", "torch.utils.collect_env"]));

    let res = resolve_in(
        &r,
        &map(&[
            ("script", "-m mypkg.train"),
            ("python", "/opt/venv/bin/python"),
            ("launcher", "-m torch.distributed.run --nproc-per-node 2"),
        ]),
        Path::new(CWD),
    )
    .unwrap();
    assert_eq!(
        res.run.argv,
        strings(&[
            "/opt/venv/bin/python",
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "-m",
            "mypkg.train"
        ])
    );
    assert_eq!(res.collect[0].argv[0], "/opt/venv/bin/python");

    // What the rungs add for a Python target, and their time limits.
    let res = resolve_in(&r, &map(&[("script", "repro.py")]), Path::new(CWD)).unwrap();
    let base = rungs::baseline::invocation(&res, Path::new("/b/rungs/01-baseline"), true);
    assert!(base.env_set.contains(&("PYTHONFAULTHANDLER".to_string(), "1".to_string())));
    assert!(base.env_set.contains(&("PYTHONUNBUFFERED".to_string(), "1".to_string())));
    let mem = rungs::memcheck::invocation(&res, Path::new("/b/memcheck.xml"));
    let line = mem.shell_line();
    for want in [
        "-u PYTORCH_CUDA_ALLOC_CONF",
        "PYTORCH_NO_CUDA_MEMORY_CACHING=1",
        "PYTHONUNBUFFERED=1",
        "--target-processes all",
        "python3 repro.py",
    ] {
        assert!(line.contains(want), "`{want}` missing: {line}");
    }
    assert_eq!(mem.timeout, Some(Duration::from_secs(3600)));
    assert_eq!(rungs::launch_blocking::invocation(&res).timeout, Some(Duration::from_secs(900)));
}

// ---- the vllm recipe -----------------------------------------------------------------------

#[test]
fn vllm_builds_from_source_for_the_local_gpu() {
    let r = builtin("vllm");
    assert!(r.python);
    assert_eq!(r.required_variables(), ["repro", "vllm_src"]);
    let sets = map(&[
        ("vllm_src", "/src/vllm"),
        ("repro", "vllm serve facebook/opt-125m --port 8000"),
        ("eager", "-O.cudagraph_mode=NONE"),
    ]);
    let res =
        resolve_in_with(&r, &sets, Path::new(CWD), &map(&[("gpu_arch", "9.0"), ("max_jobs", "12")])).unwrap();
    let b = res.build.as_ref().unwrap();
    assert_eq!(
        b.argv,
        strings(&["python3", "-m", "pip", "install", "-v", "--no-build-isolation", "-e", "."])
    );
    assert_eq!(b.cwd.as_deref(), Some(Path::new("/src/vllm")));
    assert_eq!(b.env, map(&[("MAX_JOBS", "12"), ("TORCH_CUDA_ARCH_LIST", "9.0")]));
    // Removed, not set to 0: older vLLM takes any value as yes, and a wheel location alone
    // switches the precompiled build on.
    assert_eq!(b.env_remove, strings(&["VLLM_USE_PRECOMPILED", "VLLM_PRECOMPILED_WHEEL_LOCATION"]));
    assert_eq!(b.binaries, [PathBuf::from("/src/vllm/vllm/_C.abi3.so")]);
    assert_eq!(b.timeout, Some(Duration::from_secs(14400)));
    assert_eq!(
        res.run.argv,
        strings(&["vllm", "serve", "facebook/opt-125m", "--port", "8000", "-O.cudagraph_mode=NONE"])
    );
    assert_eq!(res.collect[0].argv, strings(&["vllm", "collect-env"]));

    // The rebuild: line info (and host debug info), caches bypassed, the precompiled switches
    // gone.
    let inv = rungs::parts::target_build::invocation(
        &res,
        b,
        rungs::Debug::LineInfo,
        None,
        xtask::model::RungId::Rebuild,
    );
    for (k, v) in [
        ("NVCC_PREPEND_FLAGS", "-lineinfo -g"),
        ("CCACHE_DISABLE", "1"),
        ("SCCACHE_RECACHE", "1"),
        ("TORCH_CUDA_ARCH_LIST", "9.0"),
        ("MAX_JOBS", "12"),
    ] {
        assert!(inv.env_set.contains(&(k.to_string(), v.to_string())), "{k}={v}: {:?}", inv.env_set);
    }
    assert!(inv.env_remove.contains(&"VLLM_USE_PRECOMPILED".to_string()));

    // Only memcheck keeps the engine in one process.
    let mem = rungs::memcheck::invocation(&res, Path::new("/b/memcheck.xml"));
    assert!(mem.env_set.contains(&("VLLM_ENABLE_V1_MULTIPROCESSING".to_string(), "0".to_string())));
    assert_eq!(mem.timeout, Some(Duration::from_secs(7200)));
    let lb = rungs::launch_blocking::invocation(&res);
    assert!(!lb.env_set.iter().any(|(k, _)| k == "VLLM_ENABLE_V1_MULTIPROCESSING"));
    assert_eq!(lb.timeout, Some(Duration::from_secs(1800)));
    let mut sets = sets;
    sets.insert("memcheck_multiprocessing".into(), "1".into());
    let res = resolve_in(&r, &sets, Path::new(CWD)).unwrap();
    let mem = rungs::memcheck::invocation(&res, Path::new("/b/memcheck.xml"));
    assert!(mem.env_set.contains(&("VLLM_ENABLE_V1_MULTIPROCESSING".to_string(), "1".to_string())));
}

/// A folder of its own under the target directory.
fn scratch(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("recipes-builtin-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `xtask debug-ima --dry-run ARGS` in `dir`; its stdout.
fn dry_run(dir: &Path, args: &[&str]) -> String {
    dry_run_with(dir, args, None)
}

/// [`dry_run`] with `bin` first on PATH.
fn dry_run_with(dir: &Path, args: &[&str], bin: Option<&Path>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    if let Some(bin) = bin {
        cmd.env("PATH", support::path_with(&[bin]));
    }
    let out = cmd
        .arg("debug-ima")
        .args(args)
        .arg("--dry-run")
        .current_dir(dir)
        .env_remove("NVCC_PREPEND_FLAGS")
        .output()
        .expect("cannot start the xtask binary");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    text
}

/// The lines of the plan from the one starting with `start` to the next blank line.
fn section<'a>(plan: &'a str, start: &str) -> &'a str {
    let at = plan.find(start).unwrap_or_else(|| panic!("no `{start}` in the plan:\n{plan}"));
    let rest = &plan[at..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

#[test]
fn vllm_dry_run_prints_the_full_plan() {
    let d = scratch("vllm-dry-run");
    let src = d.join("vllm");
    std::fs::create_dir_all(&src).unwrap();
    let src_arg = format!("vllm_src={}", src.display());
    let args = [
        "--recipe",
        "vllm",
        "--set",
        &src_arg,
        "--set",
        "repro=vllm serve facebook/opt-125m --port 8000",
        "--set",
        "eager=--enforce-eager",
    ];
    let plan = dry_run(&d, &args);
    assert!(plan.starts_with(
        "recipe: vllm\nplan: baseline, rebuild, launch-blocking, coredump, attach, memcheck, initcheck, racecheck, synccheck\n"
    ));

    // collect, once, before the baseline.
    let collect = section(&plan, "collect (once, in the background beside the climb");
    assert!(
        collect.contains("env/vllm-collect-env.txt: vllm collect-env\n      timeout: 180 s"),
        "{collect}"
    );

    // Without `vllm/_C.abi3.so` the baseline builds first, with the same environment and with
    // line info, caches bypassed (as the rebuild would), so that no rebuild is needed.
    let pip = "python3 -m pip install -v --no-build-isolation -e .";
    let precompiled_off = "env -u VLLM_USE_PRECOMPILED -u VLLM_PRECOMPILED_WHEEL_LOCATION MAX_JOBS=";
    let arch = "'TORCH_CUDA_ARCH_LIST=<compute capability of GPU 0>'";
    let baseline = section(&plan, "1. baseline:");
    let cd = format!(
        "build (with line info, the target is not built yet): cd {} && {precompiled_off}",
        src.display()
    );
    assert!(baseline.contains(&cd), "{baseline}");
    assert!(
        baseline.contains(&format!(
            "{arch} 'NVCC_PREPEND_FLAGS=-lineinfo -g' CCACHE_DISABLE=1 SCCACHE_RECACHE=1 {pip}\n      timeout: 14400 s"
        )),
        "{baseline}"
    );
    // Nothing to check yet: the build it runs gives line info.
    assert!(!baseline.contains("cuobjdump"), "{baseline}");
    // The armed first run: a single vLLM server with no parallel size, so launch-blocking;
    // faulthandler for the launching Python line, the core limit 0 (faulthandler gives the
    // stacks), the run's time limit (1800 s) with the hang margin (300 s): at its limit the run
    // is looked at as hung before it is ended.
    for want in [
        "PYTHONUNBUFFERED=1",
        "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1",
        "CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1",
        "PYTHONFAULTHANDLER=1",
        "CUDA_LAUNCH_BLOCKING=1",
        "sh -c 'ulimit -c 0 2>/dev/null; exec \"$@\"' core-limit vllm serve facebook/opt-125m --port 8000 \
         --enforce-eager\n      timeout: 2100 s",
    ] {
        assert!(baseline.contains(want), "`{want}` missing: {baseline}");
    }
    // MAX_JOBS: a whole number, at least 1.
    let jobs: usize = baseline
        .split("MAX_JOBS=")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no MAX_JOBS=N: {baseline}"));
    assert!(jobs >= 1);

    // The rebuild: line info, caches bypassed, then the line-info check.
    let rebuild = section(&plan, "2. rebuild:");
    assert!(rebuild.contains(&format!(
        "build: cd {} && {precompiled_off}{jobs} {arch} 'NVCC_PREPEND_FLAGS=-lineinfo -g' CCACHE_DISABLE=1 \
         SCCACHE_RECACHE=1 {pip}\n      timeout: 14400 s",
        src.display()
    )));
    assert!(rebuild.contains(&format!("line-info check: cuobjdump -elf {}/vllm/_C.abi3.so", src.display())));

    // Every rung runs the repro with the eager flag; launch-blocking is bounded.
    let repro = "vllm serve facebook/opt-125m --port 8000 --enforce-eager";
    let lb = section(&plan, "3. launch-blocking:");
    assert!(lb.contains("CUDA_LAUNCH_BLOCKING=1 'PYTHONPATH="), "{lb}");
    // Every run of a Python target loads the launch recorder, its log in the rung's folder.
    assert!(
        lb.contains("_vllm/recorder' 'DEBUG_IMA_LAUNCHES=")
            && lb.contains(&format!(
                "_vllm/rungs/<NN>-launch-blocking/launches.log' {repro}\n      timeout: 1800 s"
            )),
        "{lb}"
    );
    let coredump = section(&plan, "4. coredump:");
    assert!(
        coredump.contains("CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1") && coredump.contains(repro),
        "{coredump}"
    );
    let attach = section(&plan, "5. attach:");
    assert!(attach.contains("CUDA_DEVICE_WAITS_ON_EXCEPTION=1") && attach.contains(repro), "{attach}");
    let memcheck = section(&plan, "6. memcheck:");
    assert!(memcheck.contains(
        "target: env -u TRITON_DISABLE_LINE_INFO -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_ALLOC_CONF \
         PYTHONUNBUFFERED=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 'PYTHONPATH="
    ));
    assert!(memcheck.contains(
        "/rungs/<NN>-memcheck/launches.log' compute-sanitizer \
         --tool memcheck --padding 64 --print-limit 1000 --target-processes all --xml --save"
    ));
    assert!(memcheck.contains(&format!("{repro}\n      timeout: 7200 s")), "{memcheck}");
    let initcheck = section(&plan, "7. initcheck:");
    assert!(
        initcheck.contains(
            "target: env -u TRITON_DISABLE_LINE_INFO -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_ALLOC_CONF \
             PYTHONUNBUFFERED=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 "
        ),
        "{initcheck}"
    );
    assert!(
        initcheck.contains(
            "compute-sanitizer --tool initcheck --print-limit 1000 --target-processes all --xml --save"
        ),
        "{initcheck}"
    );
    assert!(initcheck.contains(repro), "{initcheck}");
    // The rungs that run the target itself keep vLLM's engine processes.
    for rung in [baseline, lb, coredump, attach] {
        assert!(!rung.contains("VLLM_ENABLE_V1_MULTIPROCESSING"), "{rung}");
    }
    assert!(!d.join("bundles").exists(), "--dry-run created the bundle root");

    // With the extension built and its `vllm` command installed (on PATH: the repro's program;
    // missing, the target counts as not built yet), the baseline does not build but checks its
    // line info after the target; `--device-debug` asks for -G.
    std::fs::create_dir_all(src.join("vllm")).unwrap();
    std::fs::write(src.join("vllm/_C.abi3.so"), b"").unwrap();
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    support::plant::write_exec(&bin.join("vllm"), "#!/bin/sh\nexit 0\n");
    let mut more = args.to_vec();
    more.push("--device-debug");
    let plan = dry_run_with(&d, &more, Some(&bin));
    let baseline = section(&plan, "1. baseline:");
    assert!(!baseline.contains("pip install"), "{plan}");
    let target_at = baseline.find("target: ").unwrap();
    let check = format!("line-info check: cuobjdump -elf {}/vllm/_C.abi3.so", src.display());
    assert!(baseline.find(&check).is_some_and(|at| at > target_at), "{baseline}");
    assert!(section(&plan, "2. rebuild:").contains("NVCC_PREPEND_FLAGS=-G "), "{plan}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn vllm_without_its_required_values_names_the_flags() {
    let d = scratch("vllm-missing");
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["debug-ima", "--recipe", "vllm", "--dry-run", "--yes"])
        .current_dir(&d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--set repro=VALUE") || err.contains("--set vllm_src=VALUE"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
