//! Running the real binary's `debug-ima` against the stand-ins, as the ladder and bundle tests
//! do: the run (its arguments, environment and PATH), what it printed, and the bundle it wrote.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::{fixture, path_with, standins, Scratch};

/// The longest any one run of the binary may take before the test kills it and fails.
pub const RUN_LIMIT: Duration = Duration::from_secs(60);

impl Scratch {
    pub fn for_run(name: &str) -> Scratch {
        Scratch::create("ladder", name)
    }

    /// Writes a recipe file and returns its path.
    pub fn write_recipe(&self, yaml: &str) -> PathBuf {
        let p = self.path("recipe.yaml");
        std::fs::write(&p, yaml).unwrap();
        p
    }

    /// The one bundle the run created.
    pub fn only_bundle(&self) -> Bundle {
        let entries: Vec<PathBuf> = std::fs::read_dir(self.bundles())
            .unwrap_or_else(|e| panic!("no bundle root {}: {e}", self.bundles().display()))
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(entries.len(), 1, "one bundle expected: {entries:?}");
        Bundle { root: entries[0].clone() }
    }
}
/// A bundle directory the run wrote.
pub struct Bundle {
    pub root: PathBuf,
}

impl Bundle {
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel))
            .unwrap_or_else(|e| panic!("{}: {e}", self.root.join(rel).display()))
    }

    pub fn manifest(&self) -> serde_yaml::Value {
        serde_yaml::from_str(&self.read("manifest.yaml")).unwrap()
    }

    pub fn findings(&self) -> serde_json::Value {
        serde_json::from_str(&self.read("findings.json")).unwrap()
    }

    /// `rungs/NN-name` folder names, sorted.
    pub fn rung_dirs(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.root.join("rungs"))
            .map(|rd| rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The manifest's record of a rung.
    pub fn rung(&self, name: &str) -> serde_yaml::Value {
        let m = self.manifest();
        m["rungs"]
            .as_sequence()
            .unwrap()
            .iter()
            // By its name (the first run of it), or by its folder (`02-memcheck`).
            .find(|r| {
                r["rung"].as_str() == Some(name)
                    || r["dir"].as_str().is_some_and(|d| d.ends_with(&format!("/{name}")))
            })
            .cloned()
            .unwrap_or_else(|| panic!("no rung {name} in the manifest:\n{}", self.read("manifest.yaml")))
    }

    pub fn notes(&self, rung: &str) -> String {
        let r = self.rung(rung);
        r["notes"]
            .as_sequence()
            .map(|n| n.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    /// The exit the manifest records for a rung's command with this role: `code 1`,
    /// `signal 6`, `timed-out`, `stopped`, `interrupted` (the manifest has `!code 1`).
    pub fn exit_of(&self, rung: &str, role: &str) -> String {
        let r = self.rung(rung);
        let exit = r["commands"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|c| c["role"].as_str() == Some(role))
            .map(|c| c["exit"].clone())
            .unwrap_or_else(|| panic!("no {role} command in rung {rung}"));
        match &exit {
            serde_yaml::Value::String(s) => s.clone(),
            serde_yaml::Value::Tagged(t) => {
                let value = match &t.value {
                    serde_yaml::Value::Number(n) => n.to_string(),
                    other => format!("{other:?}"),
                };
                format!("{} {value}", t.tag.to_string().trim_start_matches('!'))
            }
            // `{code: 1}`, should the manifest stop using tags.
            serde_yaml::Value::Mapping(m) if m.len() == 1 => {
                let (k, v) = m.iter().next().unwrap();
                format!(
                    "{} {}",
                    k.as_str().unwrap_or("?"),
                    v.as_i64().map(|n| n.to_string()).unwrap_or_default()
                )
            }
            other => panic!("rung {rung}, {role}: unexpected exit {other:?}"),
        }
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.root.join(rel).exists()
    }

    pub fn files_in(&self, rel: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.root.join(rel))
            .map(|rd| rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }
}

/// One run of `xtask debug-ima` in the scratch folder.
pub struct Run<'a> {
    pub scratch: &'a Scratch,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub path: String,
    /// The binary's stdin: this file, or nothing (`/dev/null`).
    pub stdin: Option<PathBuf>,
}

/// What a finished run printed.
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Output {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn both(&self) -> String {
        format!("--- stdout\n{}\n--- stderr\n{}", self.stdout, self.stderr)
    }
}

impl<'a> Run<'a> {
    /// `debug-ima --recipe RECIPE --yes --bundle-dir SCRATCH/bundles`, the stand-ins first on
    /// PATH, replaying `case`.
    pub fn new(scratch: &'a Scratch, recipe: &Path, case: &str) -> Run<'a> {
        let args = vec![
            "debug-ima".to_string(),
            "--recipe".to_string(),
            recipe.display().to_string(),
            "--yes".to_string(),
            "--bundle-dir".to_string(),
            scratch.bundles().display().to_string(),
        ];
        let env = vec![
            ("STANDIN_CASE".to_string(), fixture(case).display().to_string()),
            ("STANDIN_PIDS".to_string(), scratch.pids_file().display().to_string()),
        ];
        Run { scratch, args, env, path: path_with(&[&standins()]), stdin: None }
    }

    pub fn arg(mut self, a: &str) -> Self {
        self.args.push(a.to_string());
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.to_string(), v.to_string()));
        self
    }

    pub fn path(mut self, path: String) -> Self {
        self.path = path;
        self
    }

    /// The stand-ins that read or check (cuda-gdb, compute-sanitizer) meet in the scratch
    /// folder's `meet/` (tests/standins/lib.sh): each waits up to `wait_s` for `count` of them to
    /// be running at once, then notes how many it saw ([`Run::seen`]).
    pub fn meet(self, count: usize, wait_s: u32) -> Self {
        let dir = self.scratch.path("meet");
        self.env("STANDIN_MEET", dir.to_str().unwrap())
            .env("STANDIN_MEET_COUNT", &count.to_string())
            .env("STANDIN_MEET_WAIT", &wait_s.to_string())
    }

    /// What each stand-in that met saw (`NAME saw N`), sorted.
    pub fn seen(scratch: &Scratch) -> Vec<String> {
        let log = std::fs::read_to_string(scratch.path("meet").join("seen.log")).unwrap_or_default();
        let mut seen: Vec<String> = log.lines().map(str::to_string).collect();
        seen.sort();
        seen
    }

    pub fn spawn(&self) -> Child {
        self.spawn_via(&[])
    }

    /// Spawns `WRAPPER... xtask ARGS...`: the binary run by another program (`unshare`).
    pub fn spawn_via(&self, wrapper: &[String]) -> Child {
        let xtask = env!("CARGO_BIN_EXE_xtask").to_string();
        let mut argv: Vec<String> = wrapper.to_vec();
        argv.push(xtask);
        argv.extend(self.args.iter().cloned());
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(&self.scratch.dir)
            .env("PATH", &self.path)
            .env_remove("NVCC_PREPEND_FLAGS")
            .env_remove("STANDIN_HANG")
            .env_remove("STANDIN_CHILD")
            .env_remove("STANDIN_NO_DUMP")
            .env_remove("STANDIN_GPUS")
            .env_remove("CUDA_VISIBLE_DEVICES")
            .stdin(match &self.stdin {
                Some(p) => Stdio::from(std::fs::File::open(p).unwrap()),
                None => Stdio::null(),
            })
            .stdout(std::fs::File::create(self.scratch.path("xtask.stdout")).unwrap())
            .stderr(std::fs::File::create(self.scratch.path("xtask.stderr")).unwrap());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.spawn().expect("cannot start the xtask binary")
    }

    /// Runs to the end (killed and failed after [`RUN_LIMIT`]).
    pub fn run(&self) -> Output {
        let start = Instant::now();
        let child = self.spawn();
        self.finish(child, start)
    }

    pub fn finish(&self, mut child: Child, start: Instant) -> Output {
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > RUN_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "`xtask {}` ran past {} s:\n{}",
                    self.args.join(" "),
                    RUN_LIMIT.as_secs(),
                    std::fs::read_to_string(self.scratch.path("xtask.stderr")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Output {
            status,
            took: start.elapsed(),
            // Lossy: `watch` passes a job's bytes through as they are.
            stdout: String::from_utf8_lossy(&std::fs::read(self.scratch.path("xtask.stdout")).unwrap())
                .into_owned(),
            stderr: String::from_utf8_lossy(&std::fs::read(self.scratch.path("xtask.stderr")).unwrap())
                .into_owned(),
        }
    }
}

/// A recipe that runs the stand-in target (found on PATH), with `extra` YAML appended.
pub fn target_recipe(extra: &str) -> String {
    format!(
        "version: 1\nname: standin\ndescription: \"the stand-in target, replaying an H200 recording\"\n\
         run:\n  command: [\"target\"]\n  timeout: 30\n{extra}"
    )
}
