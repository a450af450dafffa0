//! `py-spy dump [--native] --pid PID`: the Python stacks of a live process, for a program
//! that never returned.
//!
//! Recognises a process header (`Process 845: python3 /tmp/x/hang.py`) only when the next
//! non-blank line is py-spy's `Python v3.12.3 (/usr/bin/python3.12)`, then each thread
//! (`Thread 845 (active): "MainThread"`, `Thread 0x7f.. (idle)`) and its frames, indented, one
//! a line, innermost first: Python ones (`main (hang.py:26)`, `Queue.get
//! (multiprocessing/queues.py:103)`) and, with `--native`, native ones (`cudaDeviceSynchronize
//! (libcudart.so.13)`, a bare `0x7fb7d8951f90 (libcuda.so.580.159.04)`). Several dumps in one
//! log are several processes. [`user_frame`] is a thread's innermost frame in the user's
//! own code (not site-packages, torch, triton, multiprocessing, the standard library).
//!
//! Must not: do I/O, print, panic on any input, or allocate for lines that are not py-spy's
//! (every line of a log reaches every parser). Memory is bounded: processes, threads per
//! process, frames per thread and the length of every name kept are capped.

use super::cudagdb::open_of_last_group;
use super::names;
use super::{Evidence, Frame, LineCtx, LineParser, PyProcess, PyThread, Tool};

/// Processes kept per input.
const MAX_PROCESSES: usize = 256;
/// Threads kept per process.
const MAX_THREADS: usize = 1024;
/// Frames kept per thread (innermost first; the outer ones are counted).
const MAX_FRAMES: usize = 256;
/// Bytes kept of a command line, function, file or module name.
const MAX_NAME: usize = 2048;

/// Parses `py-spy dump` output; see the module documentation.
#[derive(Default)]
pub struct PySpyParser {
    /// A `Process N: ...` line not yet confirmed by the `Python v` line.
    pending: Option<PyProcess>,
    cur: Option<PyProcess>,
    done: Vec<PyProcess>,
    dropped: u64,
}

impl PySpyParser {
    fn end_process(&mut self) {
        if let Some(p) = self.cur.take() {
            if self.done.len() < MAX_PROCESSES {
                self.done.push(p);
            } else {
                self.dropped += 1;
            }
        }
    }
}

impl LineParser for PySpyParser {
    /// Inside a dump or after its `Process` line; else a line that starts with `P`.
    #[inline]
    fn wants(&self, line: &str, _phrase_free: bool) -> bool {
        self.cur.is_some() || self.pending.is_some() || line.as_bytes().first() == Some(&b'P')
    }

    fn line(&mut self, line: &str, ctx: LineCtx) {
        let Some(&first) = line.as_bytes().first() else { return };
        if first == b'P' {
            if let Some(rest) = line.strip_prefix("Process ") {
                if let Some(p) = parse_process(rest, ctx.lineno) {
                    self.pending = Some(p);
                    return;
                }
            }
            if let Some(version) = line.strip_prefix("Python v") {
                if let Some(mut p) = self.pending.take() {
                    self.end_process();
                    p.python = Some(cut(version.trim(), MAX_NAME));
                    self.cur = Some(p);
                }
                return;
            }
        }
        // Anything else between `Process` and `Python v` means it was not py-spy's header.
        self.pending = None;
        let Some(p) = self.cur.as_mut() else { return };
        match first {
            b'T' => {
                if let Some(t) = line.strip_prefix("Thread ").and_then(parse_thread) {
                    if p.threads.len() < MAX_THREADS {
                        p.threads.push(t);
                    }
                } else {
                    self.end_process();
                }
            }
            b' ' => {
                let Some(t) = p.threads.last_mut() else { return };
                // py-spy's `--locals` lines (`Arguments:`, `x: 1`) are indented deeper.
                let Some(body) = line.strip_prefix("    ").filter(|b| !b.starts_with(' ')) else { return };
                if let Some(frame) = parse_frame(body) {
                    if t.frames.len() < MAX_FRAMES {
                        t.frames.push(frame);
                    } else {
                        t.frames_dropped += 1;
                    }
                }
            }
            _ => self.end_process(),
        }
    }

    fn finish(&mut self, ev: &mut Evidence) {
        self.end_process();
        if !self.done.is_empty() {
            ev.saw(Tool::PySpy);
        }
        ev.python.append(&mut self.done);
        if self.dropped > 0 {
            ev.notes.push(format!(
                "{} more py-spy process dump(s) were not kept (at most {MAX_PROCESSES})",
                self.dropped
            ));
            self.dropped = 0;
        }
    }
}

/// `845: python3 /tmp/x/hang.py` -> the process.
fn parse_process(rest: &str, lineno: u64) -> Option<PyProcess> {
    let (pid, command) = rest.split_once(':')?;
    let pid = pid.parse().ok()?;
    Some(PyProcess {
        pid,
        command: cut(command.trim(), MAX_NAME),
        python: None,
        threads: Vec::new(),
        log_line: lineno,
    })
}

/// `845 (active): "MainThread"`, `0x7f3a (idle)` -> the thread.
fn parse_thread(rest: &str) -> Option<PyThread> {
    let (id, tail) = rest.split_once(" (")?;
    let id = match id.strip_prefix("0x").or_else(|| id.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => id.parse().ok()?,
    };
    let (state, after) = tail.split_once(')')?;
    if state.is_empty() || !state.bytes().all(|b| b.is_ascii_alphabetic() || b == b' ') {
        return None;
    }
    let after = after.trim();
    let name = match after.strip_prefix(':') {
        Some(n) => {
            let n = n.trim();
            Some(cut(n.strip_prefix('"').and_then(|n| n.strip_suffix('"')).unwrap_or(n), MAX_NAME))
        }
        None if after.is_empty() => None,
        None => return None,
    };
    Some(PyThread { id, name, state: Some(state.to_string()), frames: Vec::new(), frames_dropped: 0 })
}

/// `main (hang.py:26)` (Python), `cudaDeviceSynchronize (libcudart.so.13)` (native),
/// `0x7fb7d8951f90 (libcuda.so.580.159.04)` (a native frame without a symbol).
fn parse_frame(body: &str) -> Option<Frame> {
    let body = body.trim_end();
    let open = open_of_last_group(body)?;
    let func = body[..open].trim_end();
    let inner = &body[open + 1..body.len() - 1];
    if func.is_empty() || inner.is_empty() {
        return None;
    }
    let function = (!func.starts_with("0x")).then(|| cut(func, MAX_NAME));
    match inner.rsplit_once(':') {
        Some((file, line))
            if !file.is_empty() && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Some(Frame {
                function,
                file: Some(cut(file, MAX_NAME)),
                line: line.parse().ok(),
                module: None,
                python: true,
            })
        }
        _ => Some(Frame {
            function,
            file: None,
            line: None,
            module: Some(cut(inner, MAX_NAME)),
            python: false,
        }),
    }
}

/// At most `max` bytes of `s`, cut at a character boundary ([`crate::model::text::cut`]).
fn cut(s: &str, max: usize) -> String {
    crate::model::text::cut(s, max).to_string()
}

/// A thread's innermost Python frame in the user's own code ([`names::is_python_library`]),
/// with its index in the thread's frames.
pub fn user_frame(t: &PyThread) -> Option<(usize, &Frame)> {
    t.frames
        .iter()
        .enumerate()
        .find(|(_, f)| f.python && f.file.as_deref().is_some_and(|p| !names::is_python_library(p)))
}

/// The call a thread waits in, from its user frame: the next frame inwards that is Python
/// (`synchronize (torch/cuda/__init__.py:1162)`, `Queue.get (multiprocessing/queues.py:103)`).
pub fn waiting_in(t: &PyThread) -> Option<&Frame> {
    let (i, _) = user_frame(t)?;
    t.frames[..i].iter().rev().find(|f| f.python)
}

/// The innermost CUDA runtime or driver API among a thread's native frames
/// (`cudaDeviceSynchronize`, `cuCtxSynchronize_v2`): the outermost such frame, the one the
/// library called.
pub fn cuda_api(t: &PyThread) -> Option<&str> {
    t.frames.iter().filter(|f| !f.python).filter_map(|f| f.function.as_deref()).rfind(|f| {
        let upper = |p: &str| {
            f.strip_prefix(p).and_then(|r| r.chars().next()).is_some_and(|c| c.is_ascii_uppercase())
        };
        upper("cuda") || upper("cu")
    })
}

#[cfg(test)]
mod tests {
    use super::super::scan::scan_str;
    use super::*;

    const TRITON: &str = recording!("h200/hang/hang_triton/pyspy_845.log");
    const WORKER: &str = recording!("h200/hang/hang_two_procs/pyspy_1190.log");
    const TRACKER: &str = recording!("h200/hang/hang_two_procs/pyspy_1189.log");

    #[test]
    fn a_process_in_cuda_synchronize() {
        let ev = scan_str(TRITON, "pyspy-845.log");
        assert_eq!(ev.tools, vec![Tool::PySpy]);
        assert_eq!(ev.python.len(), 1);
        let p = &ev.python[0];
        assert_eq!(p.pid, 845);
        assert_eq!(p.command, "python3 /tmp/ima-hang_triton/hang_triton.py");
        assert_eq!(p.python.as_deref(), Some("3.12.3 (/usr/bin/python3.12)"));
        let t = &p.threads[0];
        assert_eq!((t.id, t.name.as_deref(), t.state.as_deref()), (845, Some("MainThread"), Some("active")));
        assert_eq!(t.frames.len(), 14);
        assert_eq!(t.frames[0].module.as_deref(), Some("libcuda.so.580.159.04"));
        assert_eq!(t.frames[0].function, None);
        assert_eq!(t.frames[5].function.as_deref(), Some("cuCtxSynchronize_v2"));
        let (_, u) = user_frame(t).unwrap();
        assert_eq!(
            (u.function.as_deref(), u.file.as_deref(), u.line),
            (Some("main"), Some("hang_triton.py"), Some(26))
        );
        let w = waiting_in(t).unwrap();
        assert_eq!(
            (w.function.as_deref(), w.file.as_deref()),
            (Some("synchronize"), Some("torch/cuda/__init__.py"))
        );
        assert_eq!(cuda_api(t), Some("cudaDeviceSynchronize"));
    }

    #[test]
    fn a_spawned_worker_waits_in_queue_get_and_the_tracker_has_no_user_frame() {
        let ev = scan_str(WORKER, "pyspy-1190.log");
        let t = &ev.python[0].threads[0];
        assert_eq!(t.state.as_deref(), Some("idle"));
        let (_, u) = user_frame(t).unwrap();
        assert_eq!((u.function.as_deref(), u.line), (Some("worker"), Some(21)));
        assert_eq!(waiting_in(t).unwrap().function.as_deref(), Some("Queue.get"));
        assert_eq!(cuda_api(t), None);
        let ev = scan_str(TRACKER, "pyspy-1189.log");
        assert!(user_frame(&ev.python[0].threads[0]).is_none());
    }

    #[test]
    fn concatenated_dumps_are_several_processes_and_lookalikes_are_not_py_spy() {
        let both = format!("{TRITON}\n{WORKER}");
        let ev = scan_str(&both, "pyspy.log");
        assert_eq!(ev.python.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![845, 1190]);
        assert_eq!(ev.python[1].threads[0].frames.len(), 12);
        // `Process 1: x` without py-spy's `Python v` line, and a gdb thread header.
        let ev = scan_str("Process 12: started\nThread 1 (idle): \"x\"\n    f (a.py:1)\n", "x.log");
        assert!(ev.python.is_empty());
        assert_eq!(parse_thread("2 (Thread 0x7f (LWP 3)):"), None);
        assert_eq!(parse_thread("0x7F1A (idle)").map(|t| t.id), Some(0x7f1a));
    }

    crate::findings::fuzz::multi_byte_kernel_names_never_panic!("pyspy.log");
}
