//! Host thread stacks from a debugger's `thread apply all bt` (a CPU core read by cuda-gdb,
//! or gdb attached to a live process).
//!
//! Recognises a thread header (`Thread 2 (Thread 0x7fe5038ed000 (LWP 4357)):`, also
//! `Thread 1 (LWP 4362):`, `Thread 1.2 (...)` and a trailing thread name) and the `#N ...`
//! frame lines right after it: `0x... in FUNC (ARGS) from LIB`, `0x... in FUNC (ARGS) at
//! FILE:LINE`, `FUNC (ARGS) at FILE:LINE` (a frame 0 without an address), `0x... in ?? ()`.
//! A stack ends at a blank line, a new header or any line that is not a frame. Only the
//! stacks with a CUDA runtime or driver API frame (`cuda` or `cu` and an upper-case letter:
//! `cudaMemcpy`, `cuLaunchKernel`) are kept, with the innermost such API and the innermost
//! launch API (`cuLaunchKernel`, `cudaGraphLaunch`, ... and their `_ptsz`/`_v2` forms).
//! Frames that follow no header (cuda-gdb's device `bt`, the stop line of a core) are not
//! host stacks and are ignored.
//!
//! Must not: do I/O, panic on any input, or allocate for lines that are not a header or a
//! frame of a header's stack (every line of a log reaches every parser). Memory is bounded:
//! frames per stack, stacks kept and the length of every string kept are capped.

use super::names;
use super::{parse_source_loc, Evidence, Frame, HostStack, LineCtx, LineParser};

/// Frames kept per stack (innermost first; the outer ones are dropped).
const MAX_FRAMES: usize = 256;
/// Stacks kept per input.
const MAX_STACKS: usize = 64;
/// Bytes kept of a function, file or module name.
const MAX_NAME: usize = 2048;

/// The launch APIs, without a `_ptsz` / `_v2` style suffix.
const LAUNCH_APIS: &[&str] = &[
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cuLaunchCooperativeKernel",
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cudaLaunchCooperativeKernel",
    "cuGraphLaunch",
    "cudaGraphLaunch",
];

/// The stack being read: the header's thread and the frames so far.
#[derive(Debug, Default)]
struct Current {
    stack: HostStack,
    /// Frames seen, including those past [`MAX_FRAMES`].
    seen: usize,
}

/// Parses `thread apply all bt` output; see the module documentation.
#[derive(Default)]
pub struct HostStackParser {
    cur: Option<Current>,
    stacks: Vec<HostStack>,
    /// Stacks in a CUDA API that were not kept (past [`MAX_STACKS`]).
    dropped: u64,
}

impl HostStackParser {
    fn end_stack(&mut self) {
        let Some(cur) = self.cur.take() else { return };
        if cur.stack.api.is_none() {
            return;
        }
        if self.stacks.len() < MAX_STACKS {
            self.stacks.push(cur.stack);
        } else {
            self.dropped += 1;
        }
    }

    fn frame(&mut self, frame: Frame) {
        let Some(cur) = self.cur.as_mut() else { return };
        cur.seen += 1;
        if let Some(api) = frame.function.as_deref().and_then(cuda_api) {
            if cur.stack.api.is_none() {
                cur.stack.api = Some(api.to_string());
            }
            if cur.stack.launch_api.is_none() && is_launch(api) {
                cur.stack.launch_api = Some(api.to_string());
            }
        }
        if cur.stack.frames.len() < MAX_FRAMES {
            cur.stack.frames.push(frame);
        }
    }
}

impl LineParser for HostStackParser {
    /// Inside a stack; else a `Thread` header.
    #[inline]
    fn wants(&self, line: &str, _phrase_free: bool) -> bool {
        self.cur.is_some() || line.as_bytes().first() == Some(&b'T')
    }

    fn line(&mut self, line: &str, ctx: LineCtx) {
        match line.as_bytes().first() {
            Some(b'#') if self.cur.is_some() => match parse_frame_line(line) {
                Some(frame) => self.frame(frame),
                None => self.end_stack(),
            },
            Some(b'T') => {
                if let Some((thread, lwp)) = parse_header(line) {
                    self.end_stack();
                    let stack = HostStack { thread, lwp, log_line: ctx.lineno, ..HostStack::default() };
                    self.cur = Some(Current { stack, seen: 0 });
                } else {
                    self.end_stack();
                }
            }
            _ => self.end_stack(),
        }
    }

    fn finish(&mut self, ev: &mut Evidence) {
        self.end_stack();
        if !self.stacks.is_empty() {
            // gdb printed them (cuda-gdb on a CPU core, in this project).
            ev.saw(super::Tool::CudaGdb);
        }
        ev.host_stacks.append(&mut self.stacks);
        if self.dropped > 0 {
            ev.notes.push(format!(
                "{} more host thread stack(s) inside a CUDA API call were not kept (at most {MAX_STACKS})",
                self.dropped
            ));
            self.dropped = 0;
        }
    }
}

/// `Thread 2 (Thread 0x7fe5038ed000 (LWP 4357)):`, `Thread 1 (LWP 4362):`,
/// `Thread 1.2 (Thread 0x... (LWP 7) "python"):`, `Thread 1 (process 99):`
/// -> (thread, lwp). Not cuda-gdb's `Thread 1 "x" received signal ...`.
fn parse_header(line: &str) -> Option<(Option<u32>, Option<u32>)> {
    let rest = line.strip_prefix("Thread ")?;
    let body = rest.trim_end().strip_suffix("):")?;
    let digits = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
    let (num, paren) = (&rest[..digits], &rest[digits..]);
    if digits == 0 || !paren.starts_with(" (") {
        return None;
    }
    // `1.2`: inferior 1, thread 2.
    let thread = num.rsplit('.').next().and_then(|n| n.parse().ok());
    let inner = &body[digits..];
    let lwp = ["(LWP ", "(process "].iter().find_map(|key| {
        let at = inner.find(key)?;
        let tail = &inner[at + key.len()..];
        let n = tail.bytes().take_while(u8::is_ascii_digit).count();
        tail[..n].parse().ok()
    });
    Some((thread, lwp))
}

/// `#N  BODY` -> the frame; `None` when the line is not a frame line.
fn parse_frame_line(line: &str) -> Option<Frame> {
    let rest = line.strip_prefix('#')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !rest[digits..].starts_with(' ') {
        return None;
    }
    parse_frame_body(&rest[digits..])
}

/// `[0x... in ]FUNC [(ARGS)] [at FILE:LINE | from LIB]`.
fn parse_frame_body(body: &str) -> Option<Frame> {
    let mut s = body.trim();
    if s.starts_with("0x") {
        let (_, tail) = s.split_once(" in ")?;
        s = tail.trim_start();
    }
    if s.is_empty() {
        return None;
    }
    let mut f = Frame::default();
    if let Some((head, tail)) = s.rsplit_once(" at ") {
        let tail = tail.trim();
        if !tail.is_empty() && !tail.contains(' ') {
            if let Some(loc) = parse_source_loc(tail) {
                f.file = Some(cap(&loc.file).to_string());
                f.line = Some(loc.line);
                s = head.trim_end();
            } else if head.ends_with(')') {
                // A line cut inside the file name (`main () at /tmp/unchecked_la`).
                s = head.trim_end();
            }
        }
    }
    if f.file.is_none() {
        if let Some((head, tail)) = s.rsplit_once(" from ") {
            let tail = tail.trim();
            if !tail.is_empty() && !tail.contains([' ', '(', ')']) {
                f.module = Some(cap(names::base_name(tail)).to_string());
                s = head.trim_end();
            }
        }
    }
    let func = function_of(s);
    if !func.is_empty() && func != "??" {
        f.function = Some(cap(func).to_string());
    }
    Some(f)
}

/// The function of `FUNC (ARGS)`: gdb puts a space before the argument list, a C++
/// signature (`at::native::f<float>(int)`, `std::function<void ()>::operator()() const`)
/// has none before its own parentheses.
fn function_of(s: &str) -> &str {
    let s = s.trim();
    match args_open(s) {
        Some(o) if o > 0 && s.as_bytes()[o - 1] == b' ' => s[..o].trim_end(),
        Some(_) => s,
        // No balanced final group: up to a ` (` outside `<...>` and `(...)`, which starts
        // the arguments of a line cut inside them (`g (a=1, b=0x7f`).
        None => {
            let b = s.as_bytes();
            let (mut angle, mut paren) = (0usize, 0usize);
            for (i, &c) in b.iter().enumerate() {
                match c {
                    b'<' => angle += 1,
                    b'>' => angle = angle.saturating_sub(1),
                    b'(' if angle == 0 && paren == 0 && i > 0 && b[i - 1] == b' ' => {
                        return s[..i].trim_end();
                    }
                    b'(' => paren += 1,
                    b')' => paren = paren.saturating_sub(1),
                    _ => {}
                }
            }
            s
        }
    }
}

/// The index of the `(` matching a final `)`, skipping quoted strings and characters
/// (`s=0x4005 "a)"`, `c=40 '('`).
fn args_open(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.last() != Some(&b')') {
        return None;
    }
    let mut depth = 0usize;
    let mut i = b.len();
    while i > 0 {
        i -= 1;
        match b[i] {
            b')' => depth += 1,
            b'(' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            q @ (b'"' | b'\'') => {
                // Back to the opening quote (one not escaped by a backslash).
                loop {
                    if i == 0 {
                        return None;
                    }
                    i -= 1;
                    if b[i] == q && (i == 0 || b[i - 1] != b'\\') {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// The CUDA runtime or driver API a frame's function is, if it is one: the leading
/// identifier when it is `cuda` or `cu` followed by an upper-case letter (`cudaMemcpy`,
/// `cuLaunchKernel_ptsz`).
fn cuda_api(function: &str) -> Option<&str> {
    let n = function.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    let ident = &function[..n];
    let tail = ident.strip_prefix("cuda").or_else(|| ident.strip_prefix("cu"))?;
    tail.as_bytes().first().filter(|c| c.is_ascii_uppercase())?;
    Some(ident)
}

/// A launch API, also with a suffix that starts with `_` (`cudaLaunchKernel_ptsz`).
fn is_launch(api: &str) -> bool {
    let base = api.split('_').next().unwrap_or(api);
    LAUNCH_APIS.contains(&base)
}

/// At most [`MAX_NAME`] bytes, cut at a character boundary.
fn cap(s: &str) -> &str {
    crate::model::text::cut(s, MAX_NAME)
}

#[cfg(test)]
mod tests {
    use super::super::scan::scan_str;
    use super::*;
    use proptest::prelude::*;

    const UNCHECKED: &str = recording!("h200/unchecked_launch/cpucore-gdb.log");
    const SHARED_ATOMIC: &str = recording!("h200/shared_atomic/cpucore-gdb.log");
    const OOB_READ_G: &str = recording!("h200/oob_read_g/cpucore-gdb.log");
    const SHARED_ATOMIC_DEVICE_BT: &str = recording!("h200/shared_atomic/cudagdb-merged-1.log");

    /// The launching thread of ../shared/transcripts/h200-cuda13/B2_site_lb_cpucore_gdb.log
    /// (H200, cuda-gdb 13.0 on a CPU core of a `CUDA_LAUNCH_BLOCKING=1` run), and the
    /// thread after it.
    const B2_SITE_LB: &str = "\
Thread 2 (Thread 0x7f28e96fb000 (LWP 4461)):
#0  0x00007f28e3814833 in ?? () from /usr/local/nvidia/lib64/libcuda.so.1
#1  0x00007f28e35d36c3 in ?? () from /usr/local/nvidia/lib64/libcuda.so.1
#12 0x00007f28e375e007 in ?? () from /usr/local/nvidia/lib64/libcuda.so.1
#13 0x00007f28e3753b95 in cuLaunchKernel () from /usr/local/nvidia/lib64/libcuda.so.1
#14 0x00005647ef09c7c4 in libcudart_static_4d8b33a106dceb3c07a56e26de61f2d53bb62a68 ()
#15 0x00005647ef0feca3 in cudaLaunchKernel ()
#16 0x00005647ef096c8e in __cudaLaunchKernel_helper (kernel=0x5648131219e0, gridDim=..., blockDim=..., args=0x7ffdfa0df3c0, sharedMem=0, stream=0x0) at /usr/local/cuda/bin/../targets/x86_64-linux/include/crt/device_functions.h:2963
#17 0x00005647ef09734c in __device_stub__Z14scatter_markerPfPKii (__par0=0x7f26c7e00000, __par1=0x7f26c7e04000, __par2=4096) at /tmp/tmpxft_0000114b_00000000-6_launch_site.cudafe1.stub.c:1
#18 0x00005647ef0973d6 in scatter_marker (__cuda_0=0x7f26c7e00000, __cuda_1=0x7f26c7e04000, __cuda_2=4096) at /src/probe/launch_site.cu:12
#19 0x00005647ef096e4c in main () at /src/probe/launch_site.cu:31

Thread 1 (Thread 0x7f28e16fe000 (LWP 4466)):
#0  0x00007f28e909ec0c in pthread_kill () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f28e904527e in raise () from /lib/x86_64-linux-gnu/libc.so.6
#2  0x00007f28e90288ff in abort () from /lib/x86_64-linux-gnu/libc.so.6
#3  0x00007f28e351b028 in ?? () from /usr/local/nvidia/lib64/libcuda.so.1
";

    fn parse(text: &str) -> Evidence {
        let mut p = HostStackParser::default();
        for (n, line) in text.lines().enumerate() {
            let (line, rank) = super::super::scan::strip_rank(line);
            p.line(line, LineCtx { lineno: n as u64 + 1, rank });
        }
        let mut ev = Evidence::default();
        p.finish(&mut ev);
        ev
    }

    fn frame(function: Option<&str>, file: Option<&str>, line: Option<u32>, module: Option<&str>) -> Frame {
        Frame {
            function: function.map(str::to_string),
            file: file.map(str::to_string),
            line,
            module: module.map(str::to_string),
            python: false,
        }
    }

    fn body(s: &str) -> Frame {
        parse_frame_body(s).expect("a frame")
    }

    /// The one stack in a launch, and that it is the only stack kept.
    fn launching(text: &str) -> HostStack {
        let ev = scan_str(text, "cpucore-gdb.log");
        assert_eq!(ev.host_stacks.len(), 1, "{:#?}", ev.host_stacks);
        let s = ev.host_stacks[0].clone();
        assert_eq!(s.launch_api.as_deref(), Some("cuLaunchKernel"));
        assert_eq!(s.api.as_deref(), Some("cuLaunchKernel"));
        s
    }

    fn has(s: &HostStack, function: &str, file: &str, line: u32) -> bool {
        s.frames.iter().any(|f| {
            f.function.as_deref() == Some(function) && f.file.as_deref() == Some(file) && f.line == Some(line)
        })
    }

    #[test]
    fn unchecked_launch_names_the_launching_line() {
        let s = launching(UNCHECKED);
        assert_eq!((s.thread, s.lwp), (Some(2), Some(4357)));
        let header = UNCHECKED.lines().position(|l| l.starts_with("Thread 2 (")).unwrap() as u64 + 1;
        assert_eq!(s.log_line, header);
        assert_eq!(s.frames.len(), 18);
        let src = "/tmp/ima-record-verdict/unchecked_launch.cu";
        assert!(has(&s, "main", src, 34), "{:#?}", s.frames);
        assert!(has(&s, "scatter_rows", src, 18), "{:#?}", s.frames);
        assert_eq!(s.frames[17], frame(Some("main"), Some(src), Some(34), None));
        assert_eq!(s.frames[0], frame(Some("clock_gettime"), None, None, None));
        assert_eq!(s.frames[1], frame(Some("clock_gettime"), None, None, Some("libc.so.6")));
        assert_eq!(s.frames[2], frame(None, None, None, Some("libcuda.so.1")));
        assert_eq!(s.frames[11], frame(Some("cuLaunchKernel"), None, None, Some("libcuda.so.1")));
        assert_eq!(s.frames[13], frame(Some("cudaLaunchKernel"), None, None, None));
        assert_eq!(
            s.frames[14],
            frame(
                Some("__cudaLaunchKernel_helper"),
                Some("/usr/local/cuda/bin/../targets/x86_64-linux/include/crt/device_functions.h"),
                Some(2963),
                None
            )
        );
    }

    #[test]
    fn shared_atomic_and_oob_read_launches() {
        let s = launching(SHARED_ATOMIC);
        assert!(has(&s, "main", "/tmp/ima-record-verdict/shared_atomic.cu", 33), "{:#?}", s.frames);
        assert!(has(&s, "histogram", "/tmp/ima-record-verdict/shared_atomic.cu", 9));
        let s = launching(OOB_READ_G);
        assert!(has(&s, "main", "/tmp/ima-record-verdict/oob_read.cu", 24), "{:#?}", s.frames);
        assert!(has(&s, "gather_rows", "/tmp/ima-record-verdict/oob_read.cu", 5));
    }

    #[test]
    fn launch_blocking_transcript() {
        let ev = parse(B2_SITE_LB);
        assert_eq!(ev.host_stacks.len(), 1);
        let s = &ev.host_stacks[0];
        assert_eq!((s.thread, s.lwp, s.log_line), (Some(2), Some(4461), 1));
        assert_eq!(s.launch_api.as_deref(), Some("cuLaunchKernel"));
        assert_eq!(s.frames.len(), 10);
        assert!(has(s, "main", "/src/probe/launch_site.cu", 31));
        assert!(has(s, "scatter_marker", "/src/probe/launch_site.cu", 12));
    }

    #[test]
    fn device_backtraces_are_not_host_stacks() {
        let ev = scan_str(SHARED_ATOMIC_DEVICE_BT, "cudagdb-merged-1.log");
        assert!(ev.host_stacks.is_empty(), "{:#?}", ev.host_stacks);
        // Nor the stop line of a core before the first header.
        let ev = parse("#0  0x00007fe50329ec0c in cudaMemcpy () from /x/libcudart.so.13\n");
        assert!(ev.host_stacks.is_empty());
        // A header ends at a non-frame line: later frames are not its.
        let ev = parse("Thread 1 (LWP 5):\n(gdb) bt\n#0  cudaMemcpy () at a.cu:3\n");
        assert!(ev.host_stacks.is_empty());
    }

    #[test]
    fn apis_and_launches() {
        let text = "\
Thread 3 (LWP 12):
#0  0x1 in ioctl () from /lib/libc.so.6
#1  0x2 in cuStreamSynchronize () from /usr/lib/libcuda.so.1
#2  0x3 in cudaStreamSynchronize_ptsz () from /usr/lib/libcudart.so.13
#3  0x4 in main () at s.cu:9
Thread 2 (Thread 0x7f (LWP 11) \"python\"):
#0  0x1 in cuLaunchKernel_ptsz () from /usr/lib/libcuda.so.1
#1  0x2 in cudaGraphLaunch_v2 () from /usr/lib/libcudart.so.13
Thread 1.4 (process 10):
#0  0x1 in cuda_helper () from /x.so
#1  0x2 in cudart::api () from /x.so
#2  0x3 in cuBLASish () from /x.so
#3  0x4 in cublasSgemm_v2 () from /x.so
";
        let ev = parse(text);
        let got: Vec<_> = ev
            .host_stacks
            .iter()
            .map(|s| (s.thread, s.lwp, s.api.as_deref(), s.launch_api.as_deref(), s.log_line))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some(3), Some(12), Some("cuStreamSynchronize"), None, 1),
                (Some(2), Some(11), Some("cuLaunchKernel_ptsz"), Some("cuLaunchKernel_ptsz"), 6),
                (Some(4), Some(10), Some("cuBLASish"), None, 9),
            ]
        );
        assert!(ev.notes.is_empty());
        assert!(!is_launch("cuLaunchKernelFoo"));
        assert!(is_launch("cudaLaunchKernelExC"));
        assert!(is_launch("cuLaunchCooperativeKernel_v2"));
        assert_eq!(cuda_api("cudaMemcpy"), Some("cudaMemcpy"));
        assert_eq!(cuda_api("cuda::std::x"), None);
        assert_eq!(cuda_api("cu"), None);
        assert_eq!(cuda_api("cudaX<int>(int)"), Some("cudaX"));
    }

    #[test]
    fn headers() {
        assert_eq!(parse_header("Thread 2 (Thread 0x7fe5038ed000 (LWP 4357)):"), Some((Some(2), Some(4357))));
        assert_eq!(parse_header("Thread 1 (LWP 4362):"), Some((Some(1), Some(4362))));
        assert_eq!(parse_header("Thread 1 (Thread 0x7f (LWP 7) \"py (x)\"):"), Some((Some(1), Some(7))));
        assert_eq!(parse_header("Thread 1.3 (Thread 0x7f (LWP 7)):  "), Some((Some(3), Some(7))));
        assert_eq!(parse_header("Thread 9 (Thread 0x7f):"), Some((Some(9), None)));
        assert_eq!(
            parse_header("Thread 1 \"oob_read\" received signal CUDA_EXCEPTION_14, Warp Illegal Address."),
            None
        );
        assert_eq!(parse_header("Thread 1 (LWP 4362)"), None);
        assert_eq!(parse_header("Thread (LWP 4362):"), None);
        assert_eq!(parse_header("Thread 1 ("), None);
        assert_eq!(parse_header("Thread 1 ():"), Some((Some(1), None)));
    }

    #[test]
    fn frame_shapes() {
        assert_eq!(
            body(" 0x00007f28e909ec0c in pthread_kill () from /lib/x86_64-linux-gnu/libc.so.6"),
            frame(Some("pthread_kill"), None, None, Some("libc.so.6"))
        );
        assert_eq!(body(" main () at x.cu:5"), frame(Some("main"), Some("x.cu"), Some(5), None));
        assert_eq!(body("0x1 in ?? ()"), frame(None, None, None, None));
        assert_eq!(
            body("0x1 in at::native::foo<float>(int) () from /x/libtorch_cuda.so"),
            frame(Some("at::native::foo<float>(int)"), None, None, Some("libtorch_cuda.so"))
        );
        assert_eq!(
            body("0x1 in std::function<void ()>::operator()() const (this=0x7ff) at /usr/include/c++/13/bits/std_function.h:591"),
            frame(
                Some("std::function<void ()>::operator()() const"),
                Some("/usr/include/c++/13/bits/std_function.h"),
                Some(591),
                None
            )
        );
        assert_eq!(
            body("0x1 in std::function<void ()>::operator()() const"),
            frame(Some("std::function<void ()>::operator()() const"), None, None, None)
        );
        assert_eq!(
            body("0x1 in f (s=0x40 \"a) at b:1\", c=40 '(') at y.c:3"),
            frame(Some("f"), Some("y.c"), Some(3), None)
        );
        assert_eq!(
            body("0x1 in foo::(anonymous namespace)::bar (x=...) at z.cc:7"),
            frame(Some("foo::(anonymous namespace)::bar"), Some("z.cc"), Some(7), None)
        );
        // Cut lines.
        assert_eq!(
            body("0x000055d2cce0aee3 in main () at /tmp/unchecked_la"),
            frame(Some("main"), None, None, None)
        );
        assert_eq!(body("0x1 in g (a=1, b=0x7f"), frame(Some("g"), None, None, None));
        assert_eq!(body("0x1 in mai"), frame(Some("mai"), None, None, None));
        assert_eq!(parse_frame_body("0x000055d2cce0"), None);
        assert_eq!(body("<signal handler called>"), frame(Some("<signal handler called>"), None, None, None));
        assert_eq!(parse_frame_line("#12"), None);
        assert_eq!(parse_frame_line("#x 0x1 in f ()"), None);
        assert_eq!(parse_frame_line("#1 "), None);
    }

    #[test]
    fn bounds() {
        let mut text = String::from("Thread 1 (LWP 1):\n#0  0x1 in cudaMemcpy () from /l.so\n");
        for i in 1..1000 {
            text.push_str(&format!("#{i}  0x1 in f{i} () at a.cc:{i}\n"));
        }
        let ev = parse(&text);
        assert_eq!(ev.host_stacks[0].frames.len(), MAX_FRAMES);
        let one = "Thread 1 (LWP 1):\n#0  0x1 in cudaFree () from /l.so\n\n";
        let ev = parse(&one.repeat(MAX_STACKS + 3));
        assert_eq!(ev.host_stacks.len(), MAX_STACKS);
        assert_eq!(ev.notes.len(), 1, "{:?}", ev.notes);
        assert!(ev.notes[0].starts_with("3 more host thread stack(s)"), "{:?}", ev.notes);
        let long = format!(
            "Thread 1 (LWP 1):\n#0  0x1 in cudaFree{}é () at {}é.cu:1\n",
            "é".repeat(5000),
            "ü".repeat(5000)
        );
        let ev = parse(&long);
        let f = &ev.host_stacks[0].frames[0];
        assert!(f.function.as_ref().unwrap().len() <= MAX_NAME);
        assert!(f.file.as_ref().unwrap().len() <= MAX_NAME);
        assert_eq!(ev.host_stacks[0].api.as_deref(), Some("cudaFree"));
    }

    #[test]
    fn recordings_cut_at_every_char_boundary_never_panic() {
        for text in [UNCHECKED, B2_SITE_LB] {
            assert_eq!(parse(text).host_stacks, scan_str(text, "x.log").host_stacks);
            for (i, _) in text.char_indices().step_by(3) {
                let _ = parse(&text[..i]);
                let _ = parse(&text[i..]);
            }
        }
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,400}") {
            let _ = scan_str(&s, "any.log");
            let _ = parse(&s);
            let _ = parse_header(&s);
            let _ = parse_frame_line(&s);
            let _ = parse_frame_body(&s);
            let _ = function_of(&s);
            let _ = args_open(&s);
            let _ = cuda_api(&s);
        }

        #[test]
        fn gdb_like_lines_never_panic(
            lines in prop::collection::vec(
                "(Thread [0-9.]{1,3} \\(|Thread 1 \\(LWP |#[0-9]{1,3}  0x[0-9a-f]{1,4} in |#0  |cuLaunchKernel|cudaMemcpy ?|\\(LWP |\\)\\)?:| at | from |\"|'|\\(|\\)|\\?\\? \\(\\)|)[ -~é]{0,40}",
                0..60,
            )
        ) {
            let text = lines.join("\n");
            let ev = parse(&text);
            prop_assert!(ev.host_stacks.len() <= MAX_STACKS);
            prop_assert!(ev.host_stacks.iter().all(|s| s.api.is_some() && s.frames.len() <= MAX_FRAMES));
            let _ = scan_str(&text, "gen.log");
        }
    }

    // Multi-byte, invalid and 5,000-character names in a CPU core's stacks (the kernel's host
    // function and its `__device_stub__` frame): no panic.
    crate::findings::fuzz::multi_byte_kernel_names_never_panic!("cpucore-gdb.log");
}
