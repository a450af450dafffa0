//! `--launcher ssh` against two real `sshd`s started on this machine on two ports (issue 25):
//! the hosts `127.0.0.1:P1,127.0.0.1:P2` are two "nodes" of one host, as CI's Slurm cluster's
//! are. Each test starts its own pair (a host key, a client key, `SetEnv` giving the stand-ins'
//! PATH and recordings, as a cluster's nodes have their tools installed) and stops it when it
//! ends. The rung's variables reach each rank only on the remote command line (sshd forwards
//! none), and the stand-in target acts on them (it waits for a debugger only when
//! `CUDA_DEVICE_WAITS_ON_EXCEPTION=1` arrived).
//!
//! With CI set and no `sshd` (or not root), the tests fail (`.ci/run` installs
//! openssh-server); elsewhere they are skipped.
//!
//! Must not: need a GPU, touch the machine's own sshd or `~/.ssh`, or leave a process behind.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::run::{target_recipe, Run};
use support::{fixture, path_with, standins, Scratch};

const SSHD: &str = "/usr/sbin/sshd";

/// Two sshd of this test, their ports, and the `ssh -F` that reaches them.
struct Pair {
    dir: PathBuf,
    ports: [u16; 2],
}

impl Pair {
    /// Starts two sshd whose sessions get `env` (`SetEnv`); `None` (skipped) where sshd is
    /// missing or the test is not root, a failure then under CI.
    fn start(s: &Scratch, env: &[(String, String)]) -> Option<Pair> {
        let id = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let root = id.is_ok_and(|u| u == "0");
        if !Path::new(SSHD).is_file() || !root {
            if std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0") {
                panic!("CI is set but {SSHD} is missing or the tests are not root: .ci/run installs openssh-server");
            }
            support::skipped("no sshd (openssh-server) or not root: the ssh launcher's real-daemon tests");
            return None;
        }
        let dir = s.path("ssh");
        std::fs::create_dir_all(&dir).unwrap();
        let keygen = |name: &str| {
            let out = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(name))
                .output()
                .unwrap();
            assert!(out.status.success(), "ssh-keygen: {}", String::from_utf8_lossy(&out.stderr));
        };
        keygen("host_key");
        keygen("id");
        std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let set_env: Vec<String> = env.iter().map(|(k, v)| format!("\"{k}={v}\"")).collect();
        let mut ports = [0u16; 2];
        for p in &mut ports {
            // A free port: the kernel's choice, released for sshd (a moment's race at most).
            *p = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let d = dir.display();
            let config = format!(
                "Port {p}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd-{p}.pid\n\
                 AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 SetEnv {}\n",
                set_env.join(" ")
            );
            let file = dir.join(format!("sshd-{p}.conf"));
            std::fs::write(&file, config).unwrap();
            let out = Command::new(SSHD)
                .arg("-f")
                .arg(&file)
                .arg("-E")
                .arg(dir.join(format!("sshd-{p}.log")))
                .output()
                .unwrap();
            assert!(out.status.success(), "sshd on {p}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let d = dir.display();
        std::fs::write(
            dir.join("ssh_config"),
            format!(
                "Host *\n  IdentityFile {d}/id\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  \
                 UserKnownHostsFile {d}/known_hosts\n  LogLevel ERROR\n"
            ),
        )
        .unwrap();
        let pair = Pair { dir, ports };
        // Up when each answers.
        let start = Instant::now();
        for p in ports {
            while std::net::TcpStream::connect(("127.0.0.1", p)).is_err() {
                assert!(start.elapsed() < Duration::from_secs(10), "sshd on {p} did not come up");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Some(pair)
    }

    fn hosts(&self) -> String {
        format!("127.0.0.1:{},127.0.0.1:{}", self.ports[0], self.ports[1])
    }

    fn ssh_command(&self) -> String {
        format!("ssh -F {}", self.dir.join("ssh_config").display())
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for p in self.ports {
            if let Ok(pid) = std::fs::read_to_string(self.dir.join(format!("sshd-{p}.pid"))) {
                if let Ok(pid) = pid.trim().parse::<i32>() {
                    let _ =
                        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGTERM);
                }
            }
        }
    }
}

/// What the ranks' sessions get from sshd: the stand-ins first on PATH, the recordings (rank
/// 1 replays `case`, every other rank a clean run), where stand-ins note their pids.
fn node_env(s: &Scratch, case: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = vec![
        ("PATH", path_with(&[&standins()])),
        ("STANDIN_CASE", fixture(case).display().to_string()),
        ("STANDIN_RANK0_CASE", fixture("clean").display().to_string()),
        ("STANDIN_PIDS", s.pids_file().display().to_string()),
    ];
    env.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    env.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn ssh_recipe(s: &Scratch, timeout: u32) -> PathBuf {
    s.write_recipe(
        &target_recipe("")
            .replace("[\"target\"]", "[\"slurm-target\"]")
            .replace("timeout: 30", &format!("timeout: {timeout}")),
    )
}

/// Without a daemon: the plan shows one ssh per host, labelled, with the rank's variables on
/// the remote line, and cuda-gdb beside the waiting rank through ssh to its host.
#[test]
fn the_dry_run_shows_one_ssh_a_host_and_the_attach_through_ssh() {
    let s = Scratch::for_run("ssh-dry-run");
    let recipe = ssh_recipe(&s, 30);
    let out = Run::new(&s, &recipe, "oob_write")
        .arg("--hosts")
        .arg("node1,node2:2222")
        .arg("--dry-run")
        .arg("--rungs")
        .arg("coredump,attach")
        .run();
    assert!(out.status.success(), "{}", out.both());
    let plan = &out.stdout;
    for want in [
        "launcher: ssh, 2 host(s) (node1, node2:2222)",
        "ssh -o BatchMode=yes node1 -- ",
        "ssh -o BatchMode=yes -p 2222 node2 -- ",
        "RANK=1",
        "WORLD_SIZE=2",
        "CUDA_DEVICE_WAITS_ON_EXCEPTION=1",
        "sed -u",
        "on the wait message: ssh -o BatchMode=yes",
    ] {
        assert!(plan.contains(want), "missing `{want}` in:\n{plan}");
    }
    assert!(!s.bundles().exists());
}

#[test]
fn hosts_without_the_ssh_launcher_or_the_reverse_is_a_usage_error() {
    let s = Scratch::for_run("ssh-usage");
    let recipe = ssh_recipe(&s, 30);
    let out = Run::new(&s, &recipe, "oob_write").arg("--launcher").arg("ssh").run();
    assert_eq!(out.code(), Some(2), "{}", out.both());
    assert!(out.stderr.contains("`--launcher ssh` needs `--hosts"), "{}", out.both());
    let out =
        Run::new(&s, &recipe, "oob_write").arg("--launcher").arg("host").arg("--hosts").arg("a,b").run();
    assert_eq!(out.code(), Some(2), "{}", out.both());
    assert!(out.stderr.contains("`--hosts` is for `--launcher ssh`"), "{}", out.both());
    let out = Run::new(&s, &recipe, "oob_write").arg("--hosts").arg("a;b").run();
    assert_eq!(out.code(), Some(2), "{}", out.both());
    assert!(out.stderr.contains("host `a;b` in `--hosts`"), "{}", out.both());
    assert!(!s.bundles().exists());
}

/// Rank 1 (the second host) replays the H200 recording of `oob_write` and faults, rank 0 a
/// clean run: the coredump and attach rungs through ssh, cuda-gdb attached on rank 1's host,
/// the triage naming each rank's host, and nothing left on either.
#[test]
fn the_ladder_runs_one_rank_a_host_and_attaches_on_the_faulting_ranks_host() {
    let s = Scratch::for_run("ssh-ladder");
    let Some(pair) = Pair::start(&s, &node_env(&s, "oob_write", &[])) else { return };
    let recipe = ssh_recipe(&s, 30);
    let out = Run::new(&s, &recipe, "oob_write")
        .env("DEBUG_IMA_SSH_COMMAND", &pair.ssh_command())
        .arg("--hosts")
        .arg(&pair.hosts())
        .arg("--rungs")
        .arg("coredump,attach")
        .run();
    assert!(out.status.success(), "{}", out.both());
    assert!(out.stdout.contains("oob_write.cu:7"), "{}", out.both());
    let (node0, node1) = (format!("127.0.0.1:{}", pair.ports[0]), format!("127.0.0.1:{}", pair.ports[1]));
    let b = s.only_bundle();
    let ranks = &b.findings()["verdict"]["ranks"];
    assert_eq!(ranks["culprit"]["rank"], 1, "{ranks}");
    assert_eq!(ranks["culprit"]["node"], node1.as_str(), "{ranks}");
    assert_eq!(ranks["collateral"][0]["rank"], 0, "{ranks}");
    assert_eq!(ranks["collateral"][0]["node"], node0.as_str(), "{ranks}");
    let err = b.read("rungs/02-attach/stderr.log");
    for want in [
        format!("0: debug-ima: task 0 on node {node0}"),
        format!("1: debug-ima: task 1 on node {node1}"),
        "1: launched scale_write".to_string(),
        "0: clean run finished".to_string(),
    ] {
        assert!(err.contains(&want), "missing `{want}`:\n{err}");
    }
    let r1 = b.read("rungs/02-attach/ranks/rank-1.stderr.log");
    assert!(r1.lines().any(|l| l == "launched scale_write"), "{r1}");
    assert!(!r1.contains("clean run finished"), "{r1}");
    // The dump of rank 1, named by host and PID, under the bundle (the remote wrote it there).
    assert!(
        b.files_in("rungs/01-coredump").iter().any(|f| f.starts_with("core_")),
        "{:?}",
        b.files_in("rungs/01-coredump")
    );
    // cuda-gdb attached through ssh on rank 1's host, to the PID its wait message named.
    let gdb = b.read("rungs/02-attach/cudagdb-attach.command.txt");
    assert!(gdb.contains(&format!(" -p {} 127.0.0.1 -- ", pair.ports[1])), "{gdb}");
    assert!(b.read("rungs/02-attach/cudagdb-attach.log").contains("(oob_write.cu:7)"));
    assert!(b.notes("attach").contains(&format!("(task 1, node {node1})")), "{}", b.notes("attach"));
    s.assert_no_standin_left();
}

/// A rank that outlives its time limit: the local fan-out is killed, each remote rank sees
/// its connection close and kills its process group; nothing of the job is left on either
/// host.
#[test]
fn a_run_killed_at_its_limit_leaves_nothing_on_either_host() {
    let s = Scratch::for_run("ssh-timeout");
    let hang = [("STANDIN_HANG", "1")];
    let Some(pair) = Pair::start(&s, &node_env(&s, "oob_write", &hang)) else { return };
    let recipe = ssh_recipe(&s, 3);
    let start = Instant::now();
    let out = Run::new(&s, &recipe, "oob_write")
        .env("DEBUG_IMA_SSH_COMMAND", &pair.ssh_command())
        .arg("--hosts")
        .arg(&pair.hosts())
        .arg("--rungs")
        .arg("baseline")
        .run();
    assert!(start.elapsed() < Duration::from_secs(60), "{}", out.both());
    let b = s.only_bundle();
    // The armed run at its limit is looked at as hung, then ended.
    assert!(
        b.notes("baseline").contains("still running at its time limit (3 s)"),
        "{}\n{}",
        b.notes("baseline"),
        out.both()
    );
    // Each rank noted its pid; give the remote watchers a moment to act.
    let pids = s.standin_pids();
    assert!(pids.len() >= 2, "{pids:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.standin_pids().iter().any(|(_, p)| support::alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    s.assert_no_standin_left();
}
