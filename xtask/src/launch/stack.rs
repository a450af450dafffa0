//! Launchers that stack. A launcher ([`Launch`]: the run's containers, a Slurm allocation,
//! a list of ssh hosts) is a value kept in an ordered list ([`Launchers`], innermost first:
//! a container, then what starts it on other nodes); placing a step is a fold over that list,
//! each launcher adding its layer ([`Layer`]) around what the ones inside it gave, or none.
//! A [`Place`] is the layers one process runs in, and what is asked of it (the command that
//! really runs, where a process beside it goes, the same place on another node, whether it
//! is in a container, its cleanup) is a fold over its layers. Adding a launcher: one file,
//! its `pub mod` line and its place in the list (docs/ARCHITECTURE.md, "Adding a launcher").
//!
//! Must not: know any launcher by name (each is its own file's), decide what runs (the
//! ladder), print, or write the bundle.

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::bundle::manifest::ContainerRecord;
use crate::model::{Invocation, Role};
use crate::process::short::{self, Output};

/// How long removing a container, giving its files back or asking the runtime about an
/// image may take.
pub const CLEANUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs a short runtime command (`docker rm -f`, `docker image inspect`, `squeue`), stdin
/// closed, killed after [`CLEANUP_TIMEOUT`]; an empty `argv` runs nothing.
pub fn run_short(argv: &[String]) -> Option<Output> {
    let (program, rest) = argv.split_first()?;
    let args: Vec<&str> = rest.iter().map(String::as_str).collect();
    Some(short::run(Path::new(program), &args, CLEANUP_TIMEOUT))
}

/// Stands for the node of the task (or rank) that printed the wait message, in the plan and
/// until it is known.
pub const NODE: &str = "<node of the waiting task>";

/// What one wrapped command needs beyond the invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A build, a target run, a tool on a dump.
    Plain,
    /// The attach rung's target: `SYS_PTRACE` and a seccomp profile that allows ptrace (in a
    /// container), the other ranks kept when one exits (a launcher of ranks).
    Ptrace,
}

/// What a step asks of the launchers: a new process in `role`, named after `what` (its logs'
/// stem, or its role), with `access`.
#[derive(Debug, Clone, Copy)]
pub struct Want<'a> {
    pub role: Role,
    pub access: Access,
    pub what: &'a str,
}

/// The number of the process being placed (`<prefix>-<NN>-<what>`), taken from the run's
/// count the first time a launcher asks for it, the same for every launcher after.
pub struct Number<'s> {
    started: &'s mut usize,
    this: Option<usize>,
}

impl Number<'_> {
    pub fn get(&mut self) -> usize {
        if let Some(n) = self.this {
            return n;
        }
        *self.started += 1;
        self.this = Some(*self.started);
        *self.started
    }
}

/// What a launcher says before the climb: its line for the user, and what the manifest
/// records of it.
pub struct Announced {
    pub line: String,
    pub container: Option<ContainerRecord>,
}

/// A launcher: one way of starting the run's processes, stacked on the ones inside it.
pub trait Launch: Debug + Send + Sync {
    /// Its layer of a new process `want` asks for, around `inner` (what the launchers inside
    /// it gave; empty on the host); `None` leaves `inner` as it is. A layer that names the
    /// process takes its [`Number`].
    fn place(&self, want: &Want, inner: &Place, number: &mut Number) -> Option<Arc<dyn Layer>>;

    /// Whether every process it places runs in an image (not the host's tools and paths).
    fn is_container(&self) -> bool {
        false
    }

    /// Whether it starts the target as ranks whose lines it labels (`N: `).
    fn ranked(&self) -> bool {
        false
    }

    /// The plan's lines about it (each ending in a newline).
    fn plan(&self) -> String;

    /// Its line for the user and its record, before the climb (may run short commands).
    fn announce(&self) -> Announced;

    /// Files its processes wrote in `dir` as another user go back to the owner of
    /// `owner_of` (a root container's).
    fn give_back(&self, _dir: &Path, _owner_of: &Path) {}

    /// The working directory of a command that names none, where it is not the tool's own.
    fn workdir(&self) -> Option<&Path> {
        None
    }
}

/// One launcher's part of a place.
pub trait Layer: Debug + Send + Sync {
    /// `inv` (already wrapped by the layers inside) as this layer runs it.
    fn wrap(&self, inv: &Invocation) -> Invocation;

    /// This layer for a process beside the one it runs; `None`: beside it, nothing of this
    /// layer or of those inside it (the process runs on the host).
    fn beside(&self) -> Option<Arc<dyn Layer>> {
        None
    }

    /// This layer moved to the node named so (a layer beside a task, once its node is known);
    /// `None`: unchanged.
    fn on_node(&self, _node: &str) -> Option<Arc<dyn Layer>> {
        None
    }

    fn in_container(&self) -> bool {
        false
    }

    /// Cleans up after the run however it ended; `false` when the layers inside are not this
    /// host's to clean up (they ran on another).
    fn clean_up(&self) -> bool {
        true
    }
}

/// Where one process runs: the layers around it, innermost first; none is the host.
#[derive(Debug, Clone, Default)]
pub struct Place {
    layers: Vec<Arc<dyn Layer>>,
}

impl Place {
    /// On the host, as a child of the tool.
    pub const HOST: Place = Place { layers: Vec::new() };

    pub fn is_host(&self) -> bool {
        self.layers.is_empty()
    }

    /// `self` with `layer` around it.
    fn around(mut self, layer: Arc<dyn Layer>) -> Place {
        self.layers.push(layer);
        self
    }

    /// The command that really runs.
    pub fn wrap(&self, inv: &Invocation) -> Invocation {
        self.layers.iter().fold(inv.clone(), |inv, l| l.wrap(&inv))
    }

    /// The same place on another node: each layer that sits on one moved to `node`.
    pub fn on_node(&self, node: &str) -> Place {
        Place { layers: self.layers.iter().map(|l| l.on_node(node).unwrap_or_else(|| l.clone())).collect() }
    }

    /// Where a process beside this one runs: each layer's beside, from the outermost in, up to
    /// the first that has none.
    pub fn beside(&self) -> Place {
        let mut layers: Vec<Arc<dyn Layer>> = self.layers.iter().rev().map_while(|l| l.beside()).collect();
        layers.reverse();
        Place { layers }
    }

    pub fn in_container(&self) -> bool {
        self.layers.iter().any(|l| l.in_container())
    }

    /// Cleans up every layer, from the outermost in (a job step cancelled before its
    /// container is removed), up to one whose inside ran on another host.
    pub fn clean_up(&self) {
        for l in self.layers.iter().rev() {
            if !l.clean_up() {
                break;
            }
        }
    }
}

/// The run's launchers, innermost first.
#[derive(Debug, Clone, Default)]
pub struct Launchers {
    list: Vec<Arc<dyn Launch>>,
}

impl Launchers {
    /// `self` with `launcher`, when there is one, around the launchers it has.
    pub fn with<L: Launch + 'static>(mut self, launcher: Option<L>) -> Launchers {
        if let Some(l) = launcher {
            self.list.push(Arc::new(l));
        }
        self
    }

    pub fn iter(&self) -> impl Iterator<Item = &dyn Launch> + '_ {
        self.list.iter().map(|l| l.as_ref())
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Where a process runs: a new one (`want`), numbered from `started`, placed by each
    /// launcher in turn; one beside the target (`None`) where the target's place says
    /// ([`Place::beside`]), on the host when there is no launcher.
    pub fn place(&self, want: Option<&Want>, started: &mut usize, target: &Place) -> Place {
        let Some(want) = want else {
            return if self.is_empty() { Place::HOST } else { target.beside() };
        };
        self.fold(want, &mut Number { started, this: None })
    }

    /// A new process numbered `n` of a count of its own (the `collect` commands').
    pub fn place_numbered(&self, want: &Want, n: usize) -> Place {
        self.fold(want, &mut Number { started: &mut 0, this: Some(n) })
    }

    fn fold(&self, want: &Want, number: &mut Number) -> Place {
        self.list.iter().fold(Place::HOST, |inner, l| match l.place(want, &inner, number) {
            Some(layer) => inner.around(layer),
            None => inner,
        })
    }

    /// Whether the processes run in an image (a launcher that is a container).
    pub fn in_container(&self) -> bool {
        self.iter().any(|l| l.is_container())
    }

    /// Whether the target's runs go through a launcher of ranks (Slurm, ssh), whose output is
    /// labelled by rank.
    pub fn ranked(&self) -> bool {
        self.iter().any(|l| l.ranked())
    }

    /// Files written as another user in `dir` go back to the owner of `owner_of`.
    pub fn give_back(&self, dir: &Path, owner_of: &Path) {
        for l in self.iter() {
            l.give_back(dir, owner_of);
        }
    }

    /// The working directory of a command that names none, where a launcher makes it other
    /// than the tool's own.
    pub fn workdir(&self) -> Option<&Path> {
        self.iter().find_map(|l| l.workdir())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::container::Containers;
    use crate::launch::slurm::Slurm;
    use crate::launch::ssh::Ssh;
    use crate::model::Runtime;

    fn containers() -> Containers {
        Containers::new(Runtime::Docker, "img", &[], false, "b", 7, Path::new("/w"))
    }

    fn slurm() -> Slurm {
        let env = |k: &str| (k == "SLURM_JOB_ID").then(|| "42".to_string());
        Slurm::from_env(&env, "debug-ima-b-7").unwrap()
    }

    fn want(role: Role, what: &str) -> Want<'_> {
        Want { role, access: Access::Plain, what }
    }

    fn line(place: &Place) -> String {
        place.wrap(&Invocation::new(vec!["tool".into()])).argv.join(" ")
    }

    /// Slurm of a container: one number a process, the container's and the job step's; the
    /// other steps in a container on the batch host; beside the target, in its container on
    /// the waiting task's node, moved there once known.
    #[test]
    fn slurm_of_a_container_numbers_once_and_places_beside_on_the_node() {
        let l = Launchers::default().with(Some(containers())).with(Some(slurm()));
        let mut started = 0;
        let build = l.place(Some(&want(Role::Build, "build")), &mut started, &Place::HOST);
        assert!(
            line(&build).starts_with("docker run --rm --name debug-ima-b-7-01-build "),
            "{}",
            line(&build)
        );
        let target = l.place(Some(&want(Role::Target, "target")), &mut started, &Place::HOST);
        let t = line(&target);
        assert!(
            t.starts_with("srun --label --kill-on-bad-exit=1 --job-name=debug-ima-b-7-02-target "),
            "{t}"
        );
        assert!(t.contains(" debug-ima docker run --rm --name debug-ima-b-7-02-target "), "{t}");
        assert_eq!(started, 2);
        assert!(target.in_container() && l.in_container() && l.ranked());
        let beside = l.place(None, &mut started, &target);
        let b = line(&beside.on_node("node2"));
        assert!(b.starts_with(
            "srun --jobid=42 --overlap -w node2 -N1 -n1 --job-name=debug-ima-b-7-02-target-beside "
        ));
        assert!(b.ends_with(" -- docker exec -e TMPDIR debug-ima-b-7-02-target tool"), "{b}");
        assert!(line(&beside).contains(&format!("-w {NODE} ")));
        assert_eq!(started, 2, "beside, nothing new is numbered");
        // Beside a process that has no beside (a step beside the target), the host.
        assert!(beside.beside().is_host() && Place::HOST.beside().is_host());
    }

    /// ssh: only the target's runs are ranks, numbered by nobody; the collect jobs are
    /// numbered in their own count, in the container when there is one.
    #[test]
    fn ssh_places_only_the_target_and_collect_has_its_own_count() {
        let l = Launchers::default().with(None::<Containers>).with(Some(Ssh::parse("n1,n2", None).unwrap()));
        let mut started = 0;
        assert!(l.place(Some(&want(Role::Cuobjdump, "x")), &mut started, &Place::HOST).is_host());
        let target = l.place(Some(&want(Role::Target, "target")), &mut started, &Place::HOST);
        assert!(line(&target).starts_with("bash -c "), "{}", line(&target));
        assert_eq!(started, 0);
        assert_eq!(line(&target.beside().on_node("n2")), "ssh -o BatchMode=yes n2 -- tool");
        assert!(!l.in_container() && l.ranked());
        let c = Launchers::default().with(Some(containers()));
        let job = c.place_numbered(&want(Role::Collect, "collect-env"), 3);
        assert!(line(&job).starts_with("docker run --rm --name debug-ima-b-7-03-collect-env "));
        assert!(Launchers::default().place(None, &mut started, &target).is_host(), "no launcher: the host");
    }
}
