//! ssh: the target's runs as one rank per host of a host list (`--launcher ssh --hosts
//! a,b:2222,user@c`), for clusters without Slurm. Each run is a local bash fan-out
//! ([`Ssh::wrap`]) that starts one `ssh HOST REMOTE` per rank at once and labels every line
//! of each with its rank (`N: `, srun's `--label` format, so that the per-rank logs and the
//! triage read both launchers alike). The remote command passes the rung's variables
//! explicitly (`cd DIR && env -u X K=V ... RANK=i WORLD_SIZE=n LOCAL_RANK=0 ARGV`: sshd
//! forwards no environment), in the same working directory (a shared filesystem is assumed,
//! as under Slurm), after one placement line ([`PLACED`]: `debug-ima: task i on node HOST`,
//! the host as the list names it). Each remote rank watches its connection: when ssh's stdin
//! closes (the run killed at its time limit, Ctrl-C, the tool itself killed), it kills its
//! process group, so that nothing is left on a host. A rank that exits non-zero ends the
//! others, as srun's `--kill-on-bad-exit=1` does, except for the attach rung's target
//! ([`Access::Ptrace`]), whose waiting rank must live until cuda-gdb is done. What runs beside
//! a rank (cuda-gdb, py-spy, a dump's trigger) is `ssh HOST REMOTE` on its host
//! ([`Ssh::on_node`]). `DEBUG_IMA_SSH_COMMAND` replaces `ssh` (words split on spaces, as
//! `GIT_SSH_COMMAND`), for a config file (`ssh -F FILE`) or a jump host.
//!
//! As a launcher ([`Launch`]), around the containers when there are: the target's run is one
//! rank on every host, what runs beside it runs on the waiting rank's host ([`Ssh::on_node`]:
//! [`NODE`] until known); every other process stays here (a shared filesystem).
//!
//! Pure: builds [`Invocation`]s and reads host lists; running them is `process`'s. Must not:
//! pass a variable's value through anything but the remote command line it is recorded in
//! (redacted there like every command).

use std::sync::Arc;

use super::stack::{Access, Announced, Launch, Layer, Number, Place, Want, NODE};
use crate::model::invocation::quote;
use crate::model::launcher::PLACED;
use crate::model::{Invocation, Role};

/// The variable that replaces `ssh` (with its options).
pub const SSH_COMMAND: &str = "DEBUG_IMA_SSH_COMMAND";

/// One host of the list: as given (the rank's node name), and how ssh reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// As the list names it (`user@node3:2222`): the node in placement lines and verdicts.
    pub spec: String,
    /// `[user@]host`, ssh's destination.
    pub dest: String,
    pub port: Option<u16>,
}

/// The hosts the ranks run on, one rank each, in rank order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ssh {
    pub hosts: Vec<Host>,
    /// `ssh` and its options (from [`SSH_COMMAND`]).
    pub command: Vec<String>,
}

impl Ssh {
    /// The host list `a,b:2222,user@c,[::1]:22` (commas or spaces between hosts) with the ssh
    /// command; `Err` says what is wrong with which host.
    pub fn parse(list: &str, command: Option<&str>) -> Result<Ssh, String> {
        let hosts: Vec<Host> = list
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|h| !h.is_empty())
            .map(host)
            .collect::<Result<_, _>>()?;
        if hosts.is_empty() {
            return Err(
                "`--launcher ssh` needs `--hosts HOST,HOST,...` (one rank per host, rank 0 first)".into()
            );
        }
        let command: Vec<String> = command
            .map(|c| c.split_whitespace().map(String::from).collect::<Vec<_>>())
            .filter(|words| !words.is_empty())
            .unwrap_or_else(|| vec!["ssh".into()]);
        Ok(Ssh { hosts, command })
    }

    /// `ssh` with its options for one host: never a prompt (`BatchMode`), the host's port.
    fn ssh_to(&self, h: &Host) -> Vec<String> {
        let mut argv = self.command.clone();
        argv.extend(["-o", "BatchMode=yes"].map(String::from));
        if let Some(p) = h.port {
            argv.extend(["-p".to_string(), p.to_string()]);
        }
        argv.push(h.dest.clone());
        argv.push("--".into());
        argv
    }

    /// `inv` as one rank on every host: `bash -c FANOUT` (see the module's header); the
    /// variables leave `env_set` for the remote command lines, the time limit stays.
    pub fn wrap(&self, inv: &Invocation, access: Access) -> Invocation {
        let n = self.hosts.len();
        let mut script = String::from(
            "set -u\n\
             # Each ssh's stdin: open until this script ends or is killed, then each rank ends.\n\
             exec 3< <(exec sleep 2147483647)\n\
             keep=$!\n\
             pids=()\n",
        );
        for (i, h) in self.hosts.iter().enumerate() {
            let mut rank = inv.clone();
            rank.set("RANK", i.to_string());
            rank.set("WORLD_SIZE", n.to_string());
            rank.set("LOCAL_RANK", "0");
            let watched = format!(
                "exec sh -c {} debug-ima {}",
                quote(&watch(i, &h.spec)),
                Invocation { cwd: None, ..rank.clone() }.shell_line()
            );
            let remote = match &rank.cwd {
                Some(c) => format!("cd {} && {watched}", quote(&c.display().to_string())),
                None => watched,
            };
            let argv: Vec<String> = self.ssh_to(h).into_iter().chain([remote]).map(|a| quote(&a)).collect();
            script.push_str(&format!(
                "{} <&3 > >(exec sed -u 's/^/{i}: /') 2> >(exec sed -u 's/^/{i}: /' >&2) &\npids+=($!)\n",
                argv.join(" ")
            ));
        }
        let kill = if access == Access::Ptrace { 0 } else { 1 };
        script.push_str(&format!(
            "exec 3<&-\n\
             status=0\n\
             for _ in \"${{pids[@]}}\"; do\n\
             \x20 wait -n \"${{pids[@]}}\"; s=$?\n\
             \x20 if [ \"$s\" -ne 0 ] && [ \"$status\" -eq 0 ]; then\n\
             \x20   status=$s\n\
             \x20   [ {kill} = 1 ] && kill \"${{pids[@]}}\" 2>/dev/null\n\
             \x20 fi\n\
             done\n\
             kill \"$keep\" 2>/dev/null\n\
             wait 2>/dev/null\n\
             exit \"$status\"\n"
        ));
        Invocation {
            timeout: inv.timeout,
            ..Invocation::new(vec!["bash".into(), "-c".into(), script, "debug-ima-ssh".into()])
        }
    }

    /// `inv` on the host named `node` (a [`Host::spec`]): `ssh HOST 'cd DIR && env ... ARGV'`;
    /// a node not in the list (the placeholder of a plan) is ssh'd to as named.
    pub fn on_node(&self, node: &str, inv: &Invocation) -> Invocation {
        let h = self.hosts.iter().find(|h| h.spec == node).cloned().unwrap_or_else(|| Host {
            spec: node.into(),
            dest: node.into(),
            port: None,
        });
        let mut argv = self.ssh_to(&h);
        argv.push(inv.shell_line());
        Invocation { timeout: inv.timeout, ..Invocation::new(argv) }
    }
}

/// The hosts as a launcher: the target's runs as one rank a host.
impl Launch for Ssh {
    fn place(&self, want: &Want, _inner: &Place, _number: &mut Number) -> Option<Arc<dyn Layer>> {
        (want.role == Role::Target).then(|| Arc::new(Ranks { s: self.clone(), access: want.access }) as _)
    }

    fn ranked(&self) -> bool {
        true
    }

    fn plan(&self) -> String {
        format!(
            "launcher: ssh, {} host(s) ({}): each target run is one rank a host (ssh, output labelled by rank, \
             RANK/WORLD_SIZE/LOCAL_RANK and the rung's variables on the remote command line); cuda-gdb attaches \
             on the waiting rank's host (ssh); the other tools run here, on the shared filesystem\n",
            self.hosts.len(),
            self.hosts.iter().map(|h| h.spec.as_str()).collect::<Vec<_>>().join(", ")
        )
    }

    fn announce(&self) -> Announced {
        let hosts: Vec<&str> = self.hosts.iter().map(|h| h.spec.as_str()).collect();
        Announced {
            line: format!("ssh: one rank on each of {}", crate::ui::safe(&hosts.join(", "), true)),
            container: None,
        }
    }
}

/// One rank on every host of the list (`ssh`), each at the inner place on its host.
#[derive(Debug)]
struct Ranks {
    s: Ssh,
    access: Access,
}

impl Layer for Ranks {
    fn wrap(&self, inv: &Invocation) -> Invocation {
        self.s.wrap(inv, self.access)
    }

    fn beside(&self) -> Option<Arc<dyn Layer>> {
        Some(Arc::new(On { s: self.s.clone(), node: NODE.into() }))
    }

    /// The ranks end with their connections; what they ran in is their hosts'.
    fn clean_up(&self) -> bool {
        false
    }
}

/// On the host named so (`ssh HOST`), at the inner place there (cuda-gdb beside the waiting
/// rank). The host is [`NODE`] until known.
#[derive(Debug)]
struct On {
    s: Ssh,
    node: String,
}

impl Layer for On {
    fn wrap(&self, inv: &Invocation) -> Invocation {
        self.s.on_node(&self.node, inv)
    }

    fn on_node(&self, node: &str) -> Option<Arc<dyn Layer>> {
        Some(Arc::new(On { s: self.s.clone(), node: node.into() }))
    }

    fn clean_up(&self) -> bool {
        false
    }
}

/// The remote rank's wrapper (`sh -c WATCH debug-ima ARGV`): a watcher of the connection in
/// the background, which kills the rank's process group when ssh's stdin closes, the
/// placement line with the shell's pid, and `exec` of the command (the same pid, its exit
/// is ssh's).
fn watch(rank: usize, node: &str) -> String {
    format!(
        "exec 3<&0\n\
         (cat <&3 >/dev/null 2>&1; kill -TERM -$$ 2>/dev/null) </dev/null >/dev/null 2>&1 &\n\
         exec 3<&-\n\
         echo {}\" pid $$\" >&2\n\
         exec \"$@\" </dev/null",
        quote(&format!("{PLACED}{rank} on node {node}"))
    )
}

/// One host: `[user@]host[:port]`, `[v6]:port`; no whitespace, quotes or shell words.
fn host(spec: &str) -> Result<Host, String> {
    let bad = |why: &str| Err(format!("host `{}` in `--hosts`: {why}", spec.escape_debug()));
    if spec.len() > 255 || !spec.bytes().all(|b| b.is_ascii_alphanumeric() || b"@.-_:[]%".contains(&b)) {
        return bad("only letters, digits and `@ . - _ : [ ]` (`[user@]host[:port]`)");
    }
    let (dest, port) = match spec.rsplit_once(':') {
        Some((d, p)) if !d.ends_with(':') && (!d.contains(':') || d.ends_with(']')) => match p.parse::<u16>()
        {
            Ok(p) if p > 0 => (d.trim_start_matches('[').trim_end_matches(']').to_string(), Some(p)),
            _ => return bad("its port is not a number from 1 to 65535"),
        },
        _ => (spec.to_string(), None),
    };
    let dest = if let Some((user, h)) = dest.split_once('[') {
        format!("{user}{}", h.trim_end_matches(']'))
    } else {
        dest
    };
    if dest.is_empty() || dest.starts_with('-') || dest.ends_with('@') {
        return bad("no host name");
    }
    Ok(Host { spec: spec.to_string(), dest, port })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn host_lists_are_read_or_refused_with_the_host_named() {
        let s = Ssh::parse("node1, node2:2222 alice@node3,[::1]:22", None).unwrap();
        let got: Vec<(&str, &str, Option<u16>)> =
            s.hosts.iter().map(|h| (h.spec.as_str(), h.dest.as_str(), h.port)).collect();
        assert_eq!(
            got,
            [
                ("node1", "node1", None),
                ("node2:2222", "node2", Some(2222)),
                ("alice@node3", "alice@node3", None),
                ("[::1]:22", "::1", Some(22))
            ]
        );
        assert_eq!(s.command, ["ssh"]);
        for (bad, why) in [
            ("", "needs `--hosts"),
            ("a;rm -rf /", "only letters"),
            ("a:0", "port"),
            ("a:99999", "port"),
            ("-oProxyCommand=x", "only letters"),
            ("-x", "no host name"),
            ("bob@", "no host name"),
            ("a b$(id)", "only letters"),
        ] {
            let e = Ssh::parse(bad, None).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        assert_eq!(Ssh::parse("a", Some("ssh -F /tmp/c")).unwrap().command, ["ssh", "-F", "/tmp/c"]);
        assert_eq!(Ssh::parse("a", Some("  ")).unwrap().command, ["ssh"]);
    }

    fn inv() -> Invocation {
        let mut i = Invocation::new(vec!["python3".into(), "serve.py".into(), "it's".into()]);
        i.set("CUDA_DEVICE_WAITS_ON_EXCEPTION", "1");
        i.remove("TRITON_DISABLE_LINE_INFO");
        i.cwd = Some("/shared/work dir".into());
        i.timeout = Some(Duration::from_secs(9));
        i
    }

    /// One ssh per host, each line labelled with its rank, the variables on the remote command
    /// line with the rank's, the working directory, the watcher, and kill-on-bad-exit unless
    /// the target waits for a debugger.
    #[test]
    fn every_host_runs_one_labelled_rank_with_its_variables() {
        let s = Ssh::parse("node1,node2:2222", None).unwrap();
        let w = s.wrap(&inv(), Access::Plain);
        assert_eq!(&w.argv[..2], ["bash", "-c"]);
        assert!(w.env_set.is_empty() && w.env_remove.is_empty() && w.cwd.is_none(), "{w:?}");
        assert_eq!(w.timeout, Some(Duration::from_secs(9)));
        let script = &w.argv[2];
        // One command a rank (its quoted remote script spans lines), each ending in its labels.
        let ranks: Vec<&str> = script.split("pids+=($!)\n").filter(|r| r.contains("ssh -o")).collect();
        assert_eq!(ranks.len(), 2, "{script}");
        let (r0, r1) = (ranks[0].trim_start_matches(|c| c != 's'), ranks[1]);
        assert!(r0.contains("ssh -o BatchMode=yes node1 -- 'cd '"), "{r0}");
        assert!(r1.starts_with("ssh -o BatchMode=yes -p 2222 node2 -- "), "{r1}");
        assert!(
            r1.ends_with(" <&3 > >(exec sed -u 's/^/1: /') 2> >(exec sed -u 's/^/1: /' >&2) &\n"),
            "{r1}"
        );
        for want in [
            "-u TRITON_DISABLE_LINE_INFO",
            "CUDA_DEVICE_WAITS_ON_EXCEPTION=1",
            "RANK=1",
            "WORLD_SIZE=2",
            "LOCAL_RANK=0",
            "debug-ima: task 1 on node node2:2222",
            "work dir",
            "serve.py",
        ] {
            assert!(r1.contains(want), "`{want}` not in {r1}");
        }
        assert!(r0.contains("RANK=0") && !r0.contains("RANK=1"), "{r0}");
        assert!(script.contains("[ 1 = 1 ] && kill"), "{script}");
        assert!(s.wrap(&inv(), Access::Ptrace).argv[2].contains("[ 0 = 1 ] && kill"));
    }

    #[test]
    fn beside_a_rank_runs_on_its_host() {
        let s = Ssh::parse("node1,node2:2222", Some("ssh -F cfg")).unwrap();
        let g = s.on_node("node2:2222", &Invocation::new(vec!["cuda-gdb".into(), "-p".into(), "9".into()]));
        assert_eq!(
            g.argv,
            ["ssh", "-F", "cfg", "-o", "BatchMode=yes", "-p", "2222", "node2", "--", "cuda-gdb -p 9"]
        );
        let mut v = Invocation::new(vec!["py-spy".into()]);
        v.set("A", "b c");
        assert_eq!(s.on_node("node9", &v).argv.last().unwrap(), "env 'A=b c' py-spy");
    }
}
