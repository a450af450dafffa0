//! Slurm: the target's runs through `srun` inside the allocation the tool runs in (salloc,
//! sbatch), wrapping whatever place the run would have had on one node (the host, or a
//! container: Slurm plus Apptainer is `srun ... -- apptainer exec ...`). Every run is a job
//! step of its own name (`--job-name`), its output labelled by task (`--label`), the rung's
//! variables exported by name (`--export=ALL,NAME,...`: the values come from srun's own
//! environment, never from its command line), and, with an image and no container runtime,
//! pyxis's flags (`--container-image`, `--container-mounts` for the bundle and the work dir,
//! one `--container-name` for the whole climb, so that what the build installs in the image on
//! a node, a vLLM rebuilt with line info, is what the later steps there run). With pyxis the
//! build is a step too, one task on every node ([`Slurm::wrap_per_node`]): in the image, not on
//! the batch host.
//! Each task announces where it runs before it `exec`s the command (one line, [`placement`]),
//! so that the attach rung can reach the node of the task that waits for a debugger with
//! `srun --jobid=J --overlap -w NODE` ([`Slurm::on_node`]). Cleanup cancels the run's step by
//! its name ([`Slurm::steps_query`], [`Slurm::cancel`]).
//!
//! As a launcher ([`Launch`]), around the containers when there are: the target's run a job
//! step of every task ([`Slurm::wrap`]), what runs beside it on the waiting task's node
//! ([`Slurm::on_node`]: [`NODE`] until known), with pyxis the build a step of one task a node;
//! every other process stays where the bundle is (a shared filesystem).
//!
//! Must not: run anything but its cleanup's `squeue` and `scancel` ([`run_short`]); building
//! commands and reading text is pure, running them is `process`'s.

use std::path::PathBuf;
use std::sync::Arc;

pub use super::stack::NODE;
use super::stack::{run_short, Access, Announced, Launch, Layer, Number, Place, Want};
use crate::model::{Invocation, Role};

/// Stands for the allocation's job id in a plan made outside one.
pub const NO_JOB: &str = "<SLURM_JOB_ID>";

#[cfg(test)]
use super::labels::{placement, task_of};
use crate::model::launcher::PLACED;

/// The allocation the run's steps go into, and how they are shaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slurm {
    /// `SLURM_JOB_ID` of the allocation (salloc or sbatch).
    pub job_id: String,
    /// `--ntasks`: the allocation's (`SLURM_NTASKS`).
    pub ntasks: Option<u32>,
    /// `--nodes`: the allocation's (`SLURM_JOB_NUM_NODES`).
    pub nodes: Option<u32>,
    /// pyxis's container, when an image is given without a container runtime.
    pub pyxis: Option<Pyxis>,
    /// `debug-ima-<bundle name>-<pid>`, as the containers' names start.
    pub prefix: String,
}

/// pyxis's flags: the image, the folders mounted at the same path, the working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pyxis {
    pub image: String,
    /// Absolute paths (the bundle, the recipe's folders, the work dir), each at the same path.
    pub mounts: Vec<PathBuf>,
    pub workdir: PathBuf,
}

impl Slurm {
    /// The allocation from the tool's environment (`lookup` reads a variable); `Err` says why
    /// not: outside an allocation there is nothing to run the steps in.
    pub fn from_env(lookup: &dyn Fn(&str) -> Option<String>, prefix: &str) -> Result<Slurm, String> {
        let Some(job_id) = lookup("SLURM_JOB_ID").filter(|j| !j.trim().is_empty()) else {
            return Err("`--launcher slurm` runs the target through `srun` inside an allocation, and \
                        SLURM_JOB_ID is not set: run debug-ima inside `salloc` (`salloc -N2 -n2 cargo \
                        xtask debug-ima ...`) or from an `sbatch` script (docs/slurm.md)"
                .to_string());
        };
        let job_id = job_id.trim().to_string();
        // Slurm's job ids are numbers, an array's `1234_5` and a heterogeneous job's `1234+0`:
        // anything else did not come from Slurm, and is not written into commands or lines.
        if job_id.len() > 64 || !job_id.bytes().all(|b| b.is_ascii_digit() || b"_+".contains(&b)) {
            return Err(format!(
                "SLURM_JOB_ID={:?} is not a Slurm job id (digits, `_`, `+`): run debug-ima inside `salloc` or \
                 `sbatch`, where Slurm sets it (docs/slurm.md)",
                job_id.chars().take(80).collect::<String>()
            ));
        }
        let num = |k: &str| lookup(k).and_then(|v| v.trim().parse::<u32>().ok()).filter(|n| *n > 0);
        Ok(Slurm {
            job_id,
            ntasks: num("SLURM_NTASKS"),
            nodes: num("SLURM_JOB_NUM_NODES").or_else(|| num("SLURM_NNODES")),
            pyxis: None,
            prefix: prefix.to_string(),
        })
    }

    /// The job-step name of one run: `<prefix>-<NN>-<what>`.
    pub fn step_name(&self, index: usize, what: &str) -> String {
        super::container::run_name(&self.prefix, index, what)
    }

    /// `inv` (already wrapped for its place on a node) as a job step of every task of the
    /// allocation: `srun --label --kill-on-bad-exit=1 --job-name=NAME --ntasks=N --nodes=M
    /// --export=ALL,VAR,... [pyxis] -- sh -c 'echo placement; exec "$@"' debug-ima ARGV`. The
    /// attach rung's target ([`Access::Ptrace`]) keeps the other tasks when one exits
    /// (`--kill-on-bad-exit=0`): the waiting task must live until cuda-gdb is done. The
    /// variables stay in the returned invocation's `env_set` (srun's own environment).
    pub fn wrap(&self, inv: &Invocation, name: &str, access: Access) -> Invocation {
        let kill = if access == Access::Ptrace { 0 } else { 1 };
        let mut argv: Vec<String> = vec![
            "srun".into(),
            "--label".into(),
            format!("--kill-on-bad-exit={kill}"),
            format!("--job-name={name}"),
        ];
        if let Some(n) = self.ntasks {
            argv.push(format!("--ntasks={n}"));
        }
        if let Some(n) = self.nodes {
            argv.push(format!("--nodes={n}"));
        }
        argv.push(export(inv));
        self.push_pyxis(&mut argv, inv, true);
        argv.push("--".into());
        argv.extend(
            [
                "sh",
                "-c",
                &format!("echo \"{PLACED}$SLURM_PROCID on node $SLURMD_NODENAME pid $$\" >&2; exec \"$@\""),
                "debug-ima",
            ]
            .map(String::from),
        );
        argv.extend(inv.argv.iter().cloned());
        Invocation { argv, ..inv.clone() }
    }

    /// `inv` on one node of the running step `name` (cuda-gdb beside the waiting task):
    /// `srun --jobid=J --overlap -w NODE -N1 -n1 --job-name=NAME-beside --export=... -- ARGV`;
    /// with pyxis, in the step's container (`--container-name`).
    pub fn on_node(&self, node: &str, name: &str, inv: &Invocation) -> Invocation {
        let mut argv: Vec<String> = vec![
            "srun".into(),
            format!("--jobid={}", self.job_id),
            "--overlap".into(),
            "-w".into(),
            node.into(),
            "-N1".into(),
            "-n1".into(),
            format!("--job-name={}", beside_name(name)),
            export(inv),
        ];
        self.push_pyxis(&mut argv, inv, false);
        argv.push("--".into());
        argv.extend(inv.argv.iter().cloned());
        Invocation { argv, ..inv.clone() }
    }

    /// `inv` (the build) as a job step of one task on every node of the allocation, in pyxis's
    /// container: `srun --label --kill-on-bad-exit=1 --job-name=NAME --ntasks-per-node=1
    /// --nodes=M --export=ALL,VAR,... [pyxis] -- ARGV`, so that each node's container has what
    /// it installs.
    pub fn wrap_per_node(&self, inv: &Invocation, name: &str) -> Invocation {
        let mut argv: Vec<String> = vec![
            "srun".into(),
            "--label".into(),
            "--kill-on-bad-exit=1".into(),
            format!("--job-name={name}"),
            "--ntasks-per-node=1".into(),
        ];
        if let Some(n) = self.nodes {
            argv.push(format!("--nodes={n}"));
        }
        argv.push(export(inv));
        self.push_pyxis(&mut argv, inv, true);
        argv.push("--".into());
        argv.extend(inv.argv.iter().cloned());
        Invocation { argv, ..inv.clone() }
    }

    /// pyxis's container of the climb: named after the climb (its [`Slurm::prefix`]), one on
    /// each node, made from the image by the first step there and used by every later one (and
    /// joined by the steps beside).
    fn push_pyxis(&self, argv: &mut Vec<String>, inv: &Invocation, new: bool) {
        let Some(p) = &self.pyxis else { return };
        if new {
            argv.push(format!("--container-image={}", p.image));
            let mounts: Vec<String> = p.mounts.iter().map(|m| format!("{0}:{0}", m.display())).collect();
            if !mounts.is_empty() {
                argv.push(format!("--container-mounts={}", mounts.join(",")));
            }
            argv.push(format!("--container-workdir={}", inv.cwd.as_ref().unwrap_or(&p.workdir).display()));
        }
        // Named: the step beside joins the running container, and a later step finds what the
        // build installed.
        argv.push(format!("--container-name={}", self.prefix));
    }

    /// `squeue -h -s -j JOB -o '%i %j'`: the allocation's steps, `JOB.STEP NAME` a line.
    pub fn steps_query(&self) -> Vec<String> {
        ["squeue", "-h", "-s", "-j", &self.job_id, "-o", "%i %j"].map(String::from).to_vec()
    }

    /// `scancel JOB.STEP...` for the steps of [`Slurm::steps_query`]'s output named `name`,
    /// and, with `beside`, its beside steps too; `None` when none is left.
    pub fn cancel(&self, squeue: &str, name: &str, beside: bool) -> Option<Vec<String>> {
        let near = beside_name(name);
        let job = format!("{}.", self.job_id);
        let ids: Vec<String> = squeue
            .lines()
            .filter_map(|l| l.trim().split_once(' '))
            .filter(|(id, n)| {
                id.starts_with(&job) && (if beside { *n == name || *n == near } else { *n == near })
            })
            .map(|(id, _)| id.to_string())
            .collect();
        if ids.is_empty() {
            return None;
        }
        let mut argv: Vec<String> = vec!["scancel".into()];
        argv.extend(ids);
        Some(argv)
    }
}

/// The allocation as a launcher: the target's runs as job steps, and with pyxis (no container
/// runtime) the build as a step of one task on every node.
impl Launch for Slurm {
    fn place(&self, want: &Want, inner: &Place, number: &mut Number) -> Option<Arc<dyn Layer>> {
        let s = self.clone();
        if want.role == Role::Build && self.pyxis.is_some() && inner.is_host() {
            return Some(Arc::new(PerNode { name: self.step_name(number.get(), want.what), s }));
        }
        (want.role == Role::Target).then(|| {
            let name = self.step_name(number.get(), want.what);
            Arc::new(Step { s, name, access: want.access }) as Arc<dyn Layer>
        })
    }

    fn ranked(&self) -> bool {
        true
    }

    fn plan(&self) -> String {
        format!(
            "launcher: slurm, job {}: each target run is a job step (srun, output labelled by task); cuda-gdb \
             attaches on the waiting task's node (srun --overlap); the other tools run here, on the shared \
             filesystem\n",
            self.job_id
        )
    }

    fn announce(&self) -> Announced {
        let line = format!(
            "slurm: job {}, target runs as job steps{}",
            crate::ui::safe(&self.job_id, true),
            self.pyxis.as_ref().map(|p| format!(" in pyxis image {}", p.image)).unwrap_or_default()
        );
        Announced { line, container: None }
    }
}

/// As a job step named so (every task of the allocation, `srun`), each task at the inner
/// place on its node.
#[derive(Debug)]
struct Step {
    s: Slurm,
    name: String,
    access: Access,
}

impl Layer for Step {
    fn wrap(&self, inv: &Invocation) -> Invocation {
        self.s.wrap(inv, &self.name, self.access)
    }

    fn beside(&self) -> Option<Arc<dyn Layer>> {
        Some(Arc::new(On { s: self.s.clone(), node: NODE.into(), name: self.name.clone() }))
    }

    /// Cancels the step of its name and its beside steps still in the queue (`scancel
    /// JOB.STEP`: killing srun ends its step, but an srun killed with SIGKILL may leave it
    /// running).
    fn clean_up(&self) -> bool {
        self.s.cancel_left(&self.name, true);
        true
    }
}

/// As a job step named so of one task on every node, in pyxis's container (the build, with
/// an image through pyxis: [`Slurm::wrap_per_node`]).
#[derive(Debug)]
struct PerNode {
    s: Slurm,
    name: String,
}

impl Layer for PerNode {
    fn wrap(&self, inv: &Invocation) -> Invocation {
        self.s.wrap_per_node(inv, &self.name)
    }

    fn in_container(&self) -> bool {
        self.s.pyxis.is_some()
    }

    fn clean_up(&self) -> bool {
        self.s.cancel_left(&self.name, true);
        true
    }
}

/// On one node (`srun --overlap -w NODE`) of the running step named so, at the inner place
/// there (cuda-gdb beside the waiting task). The node is [`NODE`] until known.
#[derive(Debug)]
struct On {
    s: Slurm,
    node: String,
    name: String,
}

impl Layer for On {
    fn wrap(&self, inv: &Invocation) -> Invocation {
        self.s.on_node(&self.node, &self.name, inv)
    }

    fn on_node(&self, node: &str) -> Option<Arc<dyn Layer>> {
        Some(Arc::new(On { s: self.s.clone(), node: node.into(), name: self.name.clone() }))
    }

    /// Cancels only its beside step: the target may still be waiting.
    fn clean_up(&self) -> bool {
        self.s.cancel_left(&self.name, false);
        true
    }
}

impl Slurm {
    /// Cancels what is left in the queue of the step named `name` ([`Slurm::cancel`]).
    fn cancel_left(&self, name: &str, whole: bool) {
        if let Some(argv) =
            run_short(&self.steps_query()).and_then(|out| self.cancel(&out.stdout, name, whole))
        {
            run_short(&argv);
        }
    }
}

fn beside_name(name: &str) -> String {
    format!("{name}-beside")
}

/// `--export=ALL,VAR,...`: the step gets srun's environment, which holds the rung's variables
/// (named, so that the plan says which).
fn export(inv: &Invocation) -> String {
    let mut s = "--export=ALL".to_string();
    for (k, _) in &inv.env_set {
        s.push(',');
        s.push_str(k);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn slurm(pyxis: bool) -> Slurm {
        let env = |k: &str| match k {
            "SLURM_JOB_ID" => Some("42".to_string()),
            "SLURM_NTASKS" => Some("2".to_string()),
            "SLURM_JOB_NUM_NODES" => Some("2".to_string()),
            _ => None,
        };
        let mut s = Slurm::from_env(&env, "debug-ima-b-7").unwrap();
        if pyxis {
            s.pyxis = Some(Pyxis {
                image: "nvcr.io/nvidia/pytorch:25.01-py3".into(),
                mounts: vec![PathBuf::from("/shared/bundles"), PathBuf::from("/shared/app")],
                workdir: PathBuf::from("/shared/app"),
            });
        }
        s
    }

    fn inv() -> Invocation {
        let mut i = Invocation::new(vec!["python3".into(), "serve.py".into()]);
        i.set("CUDA_DEVICE_WAITS_ON_EXCEPTION", "1");
        i.set("HF_TOKEN", "secret-value");
        i.remove("TRITON_DISABLE_LINE_INFO");
        i.timeout = Some(Duration::from_secs(9));
        i
    }

    #[test]
    fn outside_an_allocation_it_says_to_run_inside_one() {
        let e = Slurm::from_env(&|_| None, "p").unwrap_err();
        assert!(e.contains("salloc") && e.contains("sbatch"), "{e}");
    }

    /// A job id that Slurm did not write (a newline that would forge a line of the output, a
    /// shell word) is refused; arrays' and heterogeneous jobs' ids are taken (issue 22).
    #[test]
    fn only_a_slurm_job_id_is_taken() {
        let with = |id: &'static str| move |k: &str| (k == "SLURM_JOB_ID").then(|| id.to_string());
        for bad in ["42\nverdict: illegal-address in `x` at y.cu:1", "42; rm -rf /", "$(id)", "abc"] {
            let e = Slurm::from_env(&with(bad), "p").unwrap_err();
            assert!(e.contains("is not a Slurm job id") && !e.contains('\n'), "{e}");
        }
        for good in ["42", "1234_5", "1234+0"] {
            assert_eq!(Slurm::from_env(&with(good), "p").unwrap().job_id, good);
        }
    }

    #[test]
    fn the_target_becomes_a_labelled_step_of_every_task() {
        let s = slurm(false);
        let name = s.step_name(3, "attach");
        let w = s.wrap(&inv(), &name, Access::Plain);
        assert_eq!(
            w.argv.join(" "),
            "srun --label --kill-on-bad-exit=1 --job-name=debug-ima-b-7-03-attach --ntasks=2 --nodes=2 \
             --export=ALL,CUDA_DEVICE_WAITS_ON_EXCEPTION,HF_TOKEN -- sh -c echo \"debug-ima: task \
             $SLURM_PROCID on node $SLURMD_NODENAME pid $$\" >&2; exec \"$@\" debug-ima python3 serve.py"
        );
        // Values stay in srun's environment, never on its command line.
        assert!(!w.argv.iter().any(|a| a.contains("secret-value")));
        assert_eq!((w.env_set, w.env_remove, w.timeout), (inv().env_set, inv().env_remove, inv().timeout));
        assert!(s.wrap(&inv(), "n", Access::Ptrace).argv.contains(&"--kill-on-bad-exit=0".to_string()));
    }

    #[test]
    fn pyxis_flags_and_the_step_beside() {
        let s = slurm(true);
        let w = s.wrap(&inv(), "n", Access::Plain).argv.join(" ");
        assert!(
            w.contains(
                " --container-image=nvcr.io/nvidia/pytorch:25.01-py3 \
                 --container-mounts=/shared/bundles:/shared/bundles,/shared/app:/shared/app \
                 --container-workdir=/shared/app --container-name=debug-ima-b-7 -- "
            ),
            "{w}"
        );
        let g = s.on_node("node2", "n", &Invocation::new(vec!["cuda-gdb".into(), "-p".into(), "9".into()]));
        assert_eq!(
            g.argv.join(" "),
            "srun --jobid=42 --overlap -w node2 -N1 -n1 --job-name=n-beside --export=ALL \
             --container-name=debug-ima-b-7 -- cuda-gdb -p 9"
        );
        // The build: one task a node, in the same container as every step after it.
        let mut build = Invocation::new(vec!["pip".into(), "install".into(), "-e".into(), ".".into()]);
        build.set("NVCC_PREPEND_FLAGS", "-lineinfo -g");
        assert_eq!(
            s.wrap_per_node(&build, "debug-ima-b-7-02-build").argv.join(" "),
            "srun --label --kill-on-bad-exit=1 --job-name=debug-ima-b-7-02-build --ntasks-per-node=1 --nodes=2 \
             --export=ALL,NVCC_PREPEND_FLAGS --container-image=nvcr.io/nvidia/pytorch:25.01-py3 \
             --container-mounts=/shared/bundles:/shared/bundles,/shared/app:/shared/app \
             --container-workdir=/shared/app --container-name=debug-ima-b-7 -- pip install -e ."
        );
    }

    #[test]
    fn labels_placements_and_cancels() {
        assert_eq!(task_of("1: node2: The application encountered"), Some(1));
        assert_eq!(task_of("no label"), None);
        assert_eq!(placement("1: debug-ima: task 1 on node node2"), Some((1, "node2".into())));
        assert_eq!(placement("0: debug-ima: task 1 on node node2"), None);
        assert_eq!(placement("debug-ima: task 1 on node node2"), None);
        let s = slurm(false);
        assert_eq!(s.steps_query().join(" "), "squeue -h -s -j 42 -o %i %j");
        let q = "42.0 debug-ima-b-7-03-attach\n42.1 debug-ima-b-7-03-attach-beside\n42.2 other\n";
        assert_eq!(s.cancel(q, "debug-ima-b-7-03-attach", true).unwrap().join(" "), "scancel 42.0 42.1");
        // Beside the target, only the beside step: the target may still be waiting.
        assert_eq!(s.cancel(q, "debug-ima-b-7-03-attach", false).unwrap().join(" "), "scancel 42.1");
        assert_eq!(s.cancel("42.2 other\n", "debug-ima-b-7-03-attach", true), None);
    }
}
