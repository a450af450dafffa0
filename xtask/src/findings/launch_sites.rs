//! Static launch sites: where a native binary's host code launches each kernel, read from
//! its disassembly (`objdump -d -l -w --no-show-raw-insn`, with the source lines of `-g`).
//! nvcc compiles `kernel<<<g, b>>>(args)` into a call of the kernel's host function (the
//! kernel's own mangled name, `_Z12scatter_tailPfPKfix`), or, once the host compiler inlined
//! it, of its device stub (`_Z37__device_stub__Z12scatter_tailPfPKfixPfPKfix`, static `_ZL…` for
//! templates); `cudaLaunchKernel(kernel, …)` takes its address (`lea … <_Z12scatter_tailPfPKfix>`).
//! Every such reference outside the stubs and the registration code is a launch site. A
//! kernel with exactly one is launched from that line, whatever run faulted: the launch site
//! without `CUDA_LAUNCH_BLOCKING=1` (docs/ladder.md, "Launch-blocking").
//!
//! Also the table the ladder writes from it (`launch-sites.log`), which the scanner
//! recognises by its first line.
//!
//! Must not: run objdump or read files (it takes a reader), or name a site for a kernel that
//! has several: one site is a fact, two are a guess.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;

use super::names;
use super::{Frame, StaticLaunch};

/// The first line of the table the ladder writes (`launch-sites.log`).
pub const TABLE_HEADER: &str =
    "# debug-ima: static launch sites (objdump), kernel<TAB>function<TAB>file:line<TAB>binary<TAB>address without a line";

/// Lines longer than this in a disassembly are skipped (a symbol of megabytes is no launch).
const MAX_LINE: usize = 16 * 1024;

/// How much of a table is read.
const MAX_TABLE: u64 = 16 << 20;

/// A reference to a symbol in one instruction, before the kernels are known.
struct Reference {
    /// The enclosing function's raw symbol.
    function: String,
    target: String,
    /// A call or jump (not an address taken).
    call: bool,
    address: u64,
    at: Position,
}

/// Where an instruction comes from in the sources, as objdump's `-l --inlines` says it: the
/// innermost function (`_Z5relaxPfPKffi():`) and line, then the lines it was inlined at,
/// innermost first (`inlined by /src/late_fault.cu:58 (main)`).
#[derive(Debug, Clone, Default)]
struct Position {
    function: Option<String>,
    file: Option<String>,
    line: Option<u32>,
    inlined_by: Vec<(String, u32, String)>,
}

impl Position {
    /// The first place of the chain outside the launch machinery (a kernel's host function
    /// inlined into its caller, a stub): the line of the launch, and its function.
    fn launch(&self, kernels: &BTreeSet<&str>) -> (Option<String>, Option<String>, Option<u32>) {
        let machinery = |f: &str| launch_machinery(f, kernels);
        match self.function.as_deref() {
            Some(f) if machinery(f) => self
                .inlined_by
                .iter()
                .find(|(_, _, f)| !machinery(f))
                .map(|(file, line, f)| (Some(f.clone()), Some(file.clone()), Some(*line)))
                .unwrap_or((None, None, None)),
            f => (f.map(str::to_string), self.file.clone(), self.line),
        }
    }
}

/// The launch sites in a disassembly of `module` (its base name is recorded). Unreadable
/// input ends the reading; what was read stands.
pub fn from_objdump<R: BufRead>(mut r: R, module: &str) -> Vec<StaticLaunch> {
    let mut function = String::new();
    let mut at = Position::default();
    let mut after_insn = false;
    let mut stubs: BTreeMap<String, String> = BTreeMap::new();
    let mut refs: Vec<Reference> = Vec::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match std::io::Read::take(&mut r, MAX_LINE as u64 + 1).read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if buf.len() > MAX_LINE {
            // The rest of an overlong line is skipped.
            if buf.last() != Some(&b'\n') && r.skip_until(b'\n').is_err() {
                break;
            }
            continue;
        }
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim_end_matches(['\n', '\r']);
        if let Some(sym) = function_header(line) {
            function = sym.to_string();
            at = Position::default();
            if let Some(kernel) = stub_kernel(sym) {
                stubs.insert(sym.to_string(), kernel);
            }
        } else if let Some(f) = context_function(line) {
            at = Position { function: Some(f.to_string()), ..Position::default() };
        } else if let Some(by) = inlined_by(line) {
            if after_insn {
                // objdump repeats the chain before each instruction of the same line.
                at.inlined_by.clear();
            }
            at.inlined_by.push(by);
        } else if let Some((file, no)) = source_line(line) {
            at.file = Some(file.to_string());
            at.line = Some(no);
            at.inlined_by.clear();
        } else if let Some((address, call, target)) = reference(line) {
            if target.starts_with("_Z") || target.contains("__device_stub_") {
                refs.push(Reference {
                    function: function.clone(),
                    target: target.to_string(),
                    call,
                    address,
                    at: at.clone(),
                });
            }
        }
        after_insn = line.starts_with([' ', '\t']);
    }
    let kernels: BTreeSet<&str> = stubs.values().map(String::as_str).collect();
    let module = names::base_name(module).to_string();
    let mut out: BTreeSet<StaticLaunch> = BTreeSet::new();
    for r in &refs {
        if launch_machinery(&r.function, &kernels) {
            continue;
        }
        let kernel = match stubs.get(&r.target) {
            Some(k) if r.call => k.as_str(),
            Some(_) => continue,
            None if kernels.contains(r.target.as_str()) => r.target.as_str(),
            None => continue,
        };
        let (inner, file, line) = r.at.launch(&kernels);
        out.insert(StaticLaunch {
            kernel: names::pretty(kernel),
            site: Frame {
                function: Some(names::pretty(inner.as_deref().unwrap_or(&r.function))),
                file,
                line,
                module: Some(module.clone()),
                python: false,
            },
            // Two references without a line are two places; with one, the line is the place.
            address: if line.is_some() { 0 } else { r.address },
        });
    }
    out.into_iter().collect()
}

/// `main():` or `_Z5relaxPfPKffi():`: the function objdump's `-l` lines belong to (the one
/// inlined there, when it was).
fn context_function(line: &str) -> Option<&str> {
    if line.starts_with([' ', '\t']) {
        return None;
    }
    let f = line.strip_suffix("():")?;
    (!f.is_empty() && !f.contains(' ')).then_some(f)
}

/// `inlined by /src/late_fault.cu:58 (main)` -> (`/src/late_fault.cu`, 58, `main`).
fn inlined_by(line: &str) -> Option<(String, u32, String)> {
    let rest = line.strip_prefix("inlined by ")?;
    let (place, function) = match rest.rfind(" (") {
        Some(i) if rest.ends_with(')') => (&rest[..i], &rest[i + 2..rest.len() - 1]),
        _ => (rest, ""),
    };
    let place = match place.find(" (discriminator ") {
        Some(i) => &place[..i],
        None => place,
    };
    let (file, no) = place.rsplit_once(':')?;
    Some((file.to_string(), no.parse().ok()?, function.to_string()))
}

/// `0000000000008d24 <main>:` -> `main`.
fn function_header(line: &str) -> Option<&str> {
    let (addr, rest) = line.split_once(' ')?;
    if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    rest.strip_prefix('<')?.strip_suffix(">:")
}

/// `/src/late_fault.cu:58 (discriminator 3)` -> (`/src/late_fault.cu`, 58): objdump's `-l`
/// lines, which start in the first column and are neither headers nor `main():`.
fn source_line(line: &str) -> Option<(&str, u32)> {
    if line.starts_with([' ', '\t']) || line.is_empty() {
        return None;
    }
    let line = match line.find(" (discriminator ") {
        Some(i) => &line[..i],
        None => line,
    };
    let (file, no) = line.rsplit_once(':')?;
    let no: u32 = no.parse().ok()?;
    (!file.is_empty() && no > 0).then_some((file, no))
}

/// An instruction's symbol reference: `call   9e01 <_Z12scatter_tailPfPKfix>` (a call or a
/// jump: true), `lea 0x18e(%rip),%rax  # 9e01 <_Z…>` (an address taken: false). A target
/// with an offset (`<main+0x599>`) is inside a function, not its start; `@plt` is a library's.
fn reference(line: &str) -> Option<(u64, bool, &str)> {
    let (addr, insn) = line.trim_start().split_once(":\t")?;
    let addr = u64::from_str_radix(addr, 16).ok()?;
    let mnemonic = insn.split_whitespace().next()?;
    let call = matches!(mnemonic, "call" | "callq" | "jmp" | "jmpq" | "bl" | "b");
    if !(call || mnemonic.starts_with("lea") || mnemonic.starts_with("mov") || mnemonic == "adrp") {
        return None;
    }
    let target = insn.trim_end().strip_suffix('>')?;
    let target = &target[target.rfind('<')? + 1..];
    (!target.contains('+') && !target.contains("@plt") && !target.is_empty()).then_some((addr, call, target))
}

/// The kernel a device stub launches: `_Z37__device_stub__Z12scatter_tailPfPKfixPfPKfix`
/// demangles to `__device_stub__Z12scatter_tailPfPKfix(…)`, whose name after the prefix is the
/// kernel's mangled name without its `_`; an `extern "C"` kernel's stub is `__device_stub__foo`.
/// The `.cold` part of a stub and the template wrapper (`__wrapper__device_stub_…`) are not
/// stubs of their own.
fn stub_kernel(sym: &str) -> Option<String> {
    if sym.contains('.') || sym.contains("__wrapper__device_stub_") {
        return None;
    }
    let name = names::demangle(sym).unwrap_or_else(|| sym.to_string());
    let name = name.split('(').next()?.trim();
    let name = name.rsplit(' ').next()?;
    let kernel = name.strip_prefix("__device_stub__")?;
    if kernel.is_empty() {
        return None;
    }
    Some(if kernel.starts_with('Z') { format!("_{kernel}") } else { kernel.to_string() })
}

/// The functions whose references to a kernel are not launches: the kernel's own host
/// function, its stubs and their wrappers, and the registration code.
fn launch_machinery(function: &str, kernels: &BTreeSet<&str>) -> bool {
    let base = function.split('.').next().unwrap_or(function);
    kernels.contains(base)
        || function.contains("__device_stub_")
        || function.contains("cudaRegister")
        || function.contains("EntityRegister")
        || function.starts_with("__sti__")
        || function.starts_with("_GLOBAL__sub_I")
}

/// The one site that launches `kernel` (any spelling `names::kernel_key` equates), when there
/// is exactly one (the instantiations of a template count together).
pub fn only_site<'a>(
    sites: impl IntoIterator<Item = &'a StaticLaunch>,
    kernel: &str,
) -> Option<&'a StaticLaunch> {
    let key = names::kernel_key(kernel);
    let mut found = sites.into_iter().filter(|s| names::kernel_key(&s.kernel) == key);
    let first = found.next()?;
    found.all(|s| place(s) == place(first)).then_some(first)
}

/// Where a launch is: its frame, and without a line its address (two such are two places).
fn place(s: &StaticLaunch) -> (&Frame, u64) {
    (&s.site, s.address)
}

/// How many places launch each kernel, by [`names::kernel_key`].
pub fn places(sites: &[StaticLaunch]) -> BTreeMap<String, usize> {
    let mut per: BTreeMap<String, BTreeSet<(&Frame, u64)>> = BTreeMap::new();
    for s in sites {
        per.entry(names::kernel_key(&s.kernel)).or_default().insert(place(s));
    }
    per.into_iter().map(|(k, v)| (k, v.len())).collect()
}

/// The kernels launched from more than one place, for a note.
pub fn ambiguous(sites: &[StaticLaunch]) -> Vec<String> {
    places(sites).into_iter().filter(|(_, n)| *n > 1).map(|(k, _)| k).collect()
}

/// The table of `sites` ([`TABLE_HEADER`], then one tab-separated row each; `-` for what is
/// unknown).
pub fn table(sites: &[StaticLaunch]) -> String {
    let mut out = format!("{TABLE_HEADER}\n");
    for s in sites {
        let at = match (&s.site.file, s.site.line) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            (Some(f), None) => f.clone(),
            _ => "-".into(),
        };
        let cell = |v: &str| v.replace(['\t', '\n', '\r'], " ");
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{:x}\n",
            cell(&s.kernel),
            cell(s.site.function.as_deref().unwrap_or("-")),
            cell(&at),
            cell(s.site.module.as_deref().unwrap_or("-")),
            s.address
        ));
    }
    out
}

/// Whether an input is such a table.
pub fn looks_like(head: &[u8]) -> bool {
    head.starts_with(TABLE_HEADER.as_bytes())
}

/// Reads a table back; rows that do not parse are skipped.
pub fn parse_table<R: BufRead>(r: R) -> Vec<StaticLaunch> {
    let mut out = Vec::new();
    // A table is kilobytes; a hostile one is read only so far.
    for line in r.take(MAX_TABLE).lines().map_while(Result::ok).skip(1) {
        let cells: Vec<&str> = line.split('\t').collect();
        let [kernel, function, at, module, address] = cells[..] else { continue };
        let Ok(address) = u64::from_str_radix(address, 16) else { continue };
        let known = |v: &str| (v != "-" && !v.is_empty()).then(|| v.to_string());
        let (file, line) = match at.rsplit_once(':') {
            Some((f, l)) if l.parse::<u32>().is_ok() => (known(f), l.parse().ok()),
            _ => (known(at), None),
        };
        out.push(StaticLaunch {
            kernel: kernel.to_string(),
            site: Frame { function: known(function), file, line, module: known(module), python: false },
            address,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const O0: &str = "\
0000000000008d24 <main>:
main():
/src/late_fault.cu:34
    8d24:\tendbr64
/src/late_fault.cu:58 (discriminator 3)
    928c:\tcall   1e1f0 <__cudaPushCallConfiguration>
    92b8:\tcall   997d <_Z5relaxPfPKffi>
/src/late_fault.cu:71
    956e:\tcall   9e01 <_Z12scatter_tailPfPKfix>
    9570:\tjne    92bd <main+0x599>
000000000000997d <_Z5relaxPfPKffi>:
    9990:\tcall   9a00 <_Z29__device_stub__Z5relaxPfPKffiPfPKffi>
0000000000009a00 <_Z29__device_stub__Z5relaxPfPKffiPfPKffi>:
    9a10:\tlea    0x39(%rip),%rsi        # 997d <_Z5relaxPfPKffi>
0000000000009be4 <_Z37__device_stub__Z12scatter_tailPfPKfixPfPKfix>:
    9c6c:\tlea    0x18e(%rip),%rax        # 9e01 <_Z12scatter_tailPfPKfix>
0000000000009e01 <_Z12scatter_tailPfPKfix>:
    9e10:\tcall   9be4 <_Z37__device_stub__Z12scatter_tailPfPKfixPfPKfix>
0000000000009f00 <_ZL24__nv_cudaEntityRegisterCallbackPPv>:
    9f10:\tlea    0x1(%rip),%rsi        # 9e01 <_Z12scatter_tailPfPKfix>
";

    #[test]
    fn each_kernel_once_from_main() {
        let sites = from_objdump(O0.as_bytes(), "/build/late_fault");
        let shown: Vec<String> =
            sites.iter().map(|s| format!("{} {:?} {:?}", s.kernel, s.site.function, s.site.line)).collect();
        assert_eq!(
            shown,
            [
                "relax(float*, float const*, float, int) Some(\"main\") Some(58)",
                "scatter_tail(float*, float const*, int, long long) Some(\"main\") Some(71)"
            ]
        );
        assert!(ambiguous(&sites).is_empty());
        assert_eq!(places(&sites).len(), 2);
        assert_eq!(only_site(&sites, "scatter_tail").unwrap().site.line, Some(71));
        assert_eq!(sites[0].site.module.as_deref(), Some("late_fault"));
        let back = parse_table(table(&sites).as_bytes());
        assert_eq!(back, sites);
        assert!(looks_like(table(&sites).as_bytes()));
    }

    #[test]
    fn a_kernel_launched_twice_has_no_site() {
        let two = O0.replace(
            "    9570:\tjne",
            "/src/late_fault.cu:80\n    9571:\tcall   9e01 <_Z12scatter_tailPfPKfix>\n    9570:\tjne",
        );
        let sites = from_objdump(two.as_bytes(), "late_fault");
        assert_eq!(places(&sites)["scatter_tail"], 2);
        assert!(only_site(&sites, "scatter_tail").is_none());
        assert!(only_site(&sites, "relax").is_some());
        assert_eq!(ambiguous(&sites), ["scatter_tail"]);
    }

    #[test]
    fn stubs_name_their_kernels() {
        assert_eq!(
            stub_kernel("_Z37__device_stub__Z12scatter_tailPfPKfixPfPKfix").as_deref(),
            Some("_Z12scatter_tailPfPKfix")
        );
        assert_eq!(
            stub_kernel("_ZL46__device_stub__Z8axpy_vecIfLi4EEvPT_PKS0_S0_ixPfPKffix").as_deref(),
            Some("_Z8axpy_vecIfLi4EEvPT_PKS0_S0_ix")
        );
        assert_eq!(stub_kernel("_Z29__device_stub__Z5relaxPfPKffiPfPKffi.cold"), None);
        assert_eq!(stub_kernel("_Z31__wrapper__device_stub_axpy_vecIfLi4EEvRPT_RPKS0_RS0_RiRx"), None);
        assert_eq!(stub_kernel("main"), None);
    }

    #[test]
    fn garbage_and_huge_lines_give_nothing_and_never_panic() {
        for input in ["", "\0\0\0", "<>:\n:\t<\n", "0 <>:\n  1:\tcall <>\n", "x:1\n  z:\tcall 1 <_Z>\n"] {
            let _ = from_objdump(input.as_bytes(), "m");
            let _ = parse_table(input.as_bytes());
        }
        let huge = format!("0 <main>:\n    1:\tcall 2 <{}>\n{O0}", "_Z".repeat(MAX_LINE));
        let huge = from_objdump(huge.as_bytes(), "m");
        assert!(ambiguous(&huge).is_empty() && places(&huge).len() == 2, "{huge:?}");
        let multi = "0 <核>:\n/src/😀.cu:3\n    1:\tcall   2 <_Z1kv>\n2 <_Z19__device_stub__Z1kvv>:\n";
        let sites = from_objdump(multi.as_bytes(), "m");
        assert_eq!(sites.len(), 1);
        assert_eq!(sites[0].site.file.as_deref(), Some("/src/😀.cu"));
        assert!(places(&[]).is_empty());
    }

    /// The H200 recordings (tests/fixtures/h200/objdump): nvcc 13.0 with `-lineinfo -g` at
    /// the host compiler's default and at `-O2` (the device stub inlined into `main`), and
    /// without `-g` (no lines: the function only).
    #[test]
    fn the_recorded_binaries_name_their_launch_lines() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/h200/objdump");
        let sites = |name: &str| {
            let text = std::fs::read_to_string(format!("{dir}/{name}.d.txt")).unwrap();
            from_objdump(text.as_bytes(), name)
        };
        let at = |name: &str, kernel: &str| {
            let all = sites(name);
            let s = only_site(&all, kernel).unwrap_or_else(|| panic!("{name} {kernel}: {all:#?}"));
            let file = s.site.file.as_deref().map(names::base_name).unwrap_or("-").to_string();
            format!("{} {}:{}", s.site.function.as_deref().unwrap_or("-"), file, s.site.line.unwrap_or(0))
        };
        // `relax` is launched in the loop and once more after the bad launch.
        assert_eq!(ambiguous(&sites("late_fault")), ["relax"]);
        assert_eq!(at("late_fault", "scatter_tail"), "main late_fault.cu:74");
        assert_eq!(at("late_fault", "reduce_sum"), "main late_fault.cu:59");
        // At -O2 the kernels' host functions are inlined into `main`: without `--inlines` the
        // line is the kernel's own, so no line is named, and each call is a place of its own.
        let o2 = sites("late_fault_O2");
        assert_eq!(ambiguous(&o2), ["relax"]);
        assert_eq!(at("late_fault_O2", "scatter_tail"), "main -:0");
        // With `--inlines` (the step's), the line it was inlined at: recorded with the PyPI
        // nvcc 13.5 and Debian's binutils 2.40 (tests/fixtures/toolchain/README.md).
        let text =
            std::fs::read_to_string(format!("{dir}/../../toolchain/objdump/late_fault_O2.inlines.d.txt"))
                .unwrap();
        let inl = from_objdump(text.as_bytes(), "late_fault");
        assert_eq!(ambiguous(&inl), ["relax"]);
        let lines = |k: &str| {
            let mut v: Vec<u32> = inl
                .iter()
                .filter(|s| names::kernel_key(&s.kernel) == k)
                .filter_map(|s| s.site.line)
                .collect();
            v.sort();
            v
        };
        assert_eq!(lines("relax"), [58, 75]);
        assert_eq!(lines("scatter_tail"), [74]);
        assert_eq!(lines("reduce_sum"), [59]);
        let nog = sites("late_fault_nog");
        assert_eq!(ambiguous(&nog), ["relax"]);
        let s = only_site(&nog, "scatter_tail").unwrap();
        assert_eq!((s.site.function.as_deref(), s.site.line), (Some("main"), None));
        assert_eq!(at("templated", "axpy_vec<float, 4>"), "main templated.cu:23");
        assert_eq!(at("oob_write", "scale_write"), "main oob_write.cu:15");
        // The capture: the line that put the kernel into the graph, not the replay.
        assert_eq!(at("graph_fault", "shift_copy"), "main graph_fault.cu:27");
        assert_eq!(at("unchecked_launch", "scatter_rows"), "main unchecked_launch.cu:34");
        assert_eq!(at("inlined", "apply_offsets"), "main inlined.cu:22");
    }
}
