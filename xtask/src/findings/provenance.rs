//! Where the run's kernels came from, as the launch recorder wrote it (`launches.log`; the
//! record formats are in `ladder/recorder.py`'s header): the Triton kernels torch.compile's
//! Inductor generated (`inductor`), the user's model lines each kernel's FX nodes were traced
//! from (`model`), and code compiled at run time (`jit`: a `torch.utils.cpp_extension`
//! build, an NVRTC program of CuPy or cuda.core). `origin` turns these into a verdict's origin.
//!
//! Must not: read files (the records arrive through [`super::launch_log`]'s reader), or keep
//! a record it cannot parse (the caller counts it as skipped).

use serde::Serialize;

/// A Python frame as the recorder wrote it (`FILE`, `LINE`, `FUNCTION`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Site {
    pub file: String,
    pub line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
}

/// A kernel Inductor generated, loaded by its output code (the wrapper).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct InductorKernel {
    pub pid: u32,
    /// The generated kernel's name (`triton_poi_fused_add_index_0`), which the device names.
    pub kernel: String,
    /// The generated kernel's file (`<cache>/<h[1:3]>/c<h>.py`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_file: Option<String>,
    /// The output code that loads and launches it, and the line where it loads it.
    pub wrapper: String,
    pub wrapper_line: u32,
    /// The FX source nodes the kernel fused (Dynamo's names), and their ATen ops.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aten: Vec<String>,
}

/// The user's line one FX source node of a generated kernel was traced from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ModelLine {
    pub pid: u32,
    pub kernel: String,
    pub node: String,
    /// The statement (`tiny_model.py:28 in forward`).
    pub site: Site,
    /// Its text, as the stack trace quoted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The frames around it (the module calls), innermost first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub callers: Vec<Site>,
    /// The lines of the kernel's file whose load, store or index assert goes through the
    /// tensor this node indexes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kernel_lines: Vec<u32>,
}

/// Code compiled while the program ran.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct JitBuild {
    pub pid: u32,
    /// What compiled it: `torch.utils.cpp_extension`, `cupy.RawKernel`, `cupy.RawModule`,
    /// `cuda.core.Program`.
    pub library: String,
    /// The extension's or program's name, where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The `__global__` functions its source defines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<String>,
    /// Where its source can be read: the extension's file, or the NVRTC string saved beside
    /// the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The library it built and loaded (an extension's `.so`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The user's frame that asked for the build.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<Site>,
}

impl JitBuild {
    /// An NVRTC program (compiled from a string), not an extension built by nvcc.
    pub fn is_nvrtc(&self) -> bool {
        self.library != CPP_EXTENSION
    }
}

/// The library of a JIT-built PyTorch extension.
pub const CPP_EXTENSION: &str = "torch.utils.cpp_extension";

/// What the recorder said of the kernels' origins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Records {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inductor: Vec<InductorKernel>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model: Vec<ModelLine>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jit: Vec<JitBuild>,
}

impl Records {
    pub fn is_empty(&self) -> bool {
        self.inductor.is_empty() && self.model.is_empty() && self.jit.is_empty()
    }

    /// Sorted and without repeats (the log of several processes, or read twice).
    pub fn settle(&mut self) {
        self.inductor.sort();
        self.inductor.dedup();
        self.model.sort();
        self.model.dedup();
        self.jit.sort();
        self.jit.dedup();
    }
}

/// `-` is the recorder's "none".
fn some(s: &str) -> Option<String> {
    (!s.is_empty() && s != "-").then(|| s.to_string())
}

fn list(s: &str, sep: char) -> Vec<String> {
    s.split(sep).map(str::trim).filter(|x| !x.is_empty() && *x != "-").map(str::to_string).collect()
}

/// A recorder's frame (`FILE`, `LINE`, `FUNCTION`; `-` or an empty file is none), for every
/// kind of record ([`super::launch_log`]'s too).
pub fn site(file: &str, line: &str, function: &str) -> Option<Site> {
    let line: u32 = line.parse().ok()?;
    (!file.is_empty() && file != "-").then(|| Site { file: file.to_string(), line, function: some(function) })
}

/// `FILE:LINE:FUNCTION` (the file may hold `:`): a frame of a recorder's stack.
pub fn stack_site(s: &str) -> Option<Site> {
    let (rest, function) = s.rsplit_once(':')?;
    let (file, line) = rest.rsplit_once(':')?;
    site(file, line, function)
}

/// One `inductor`, `model` or `jit` record (`cells[0]` is its kind, `cells[1]` the pid) into
/// `into`; false when it is not one of them or does not parse.
pub fn record(cells: &[&str], pid: u32, into: &mut Records) -> bool {
    match cells.first().copied() {
        Some("inductor") => {
            let [_, _, kernel, kfile, wrapper, wline, nodes, aten, ..] = cells[..] else { return false };
            let Ok(wrapper_line) = wline.parse() else { return false };
            if kernel.is_empty() || wrapper.is_empty() {
                return false;
            }
            into.inductor.push(InductorKernel {
                pid,
                kernel: kernel.to_string(),
                kernel_file: some(kfile),
                wrapper: wrapper.to_string(),
                wrapper_line,
                nodes: list(nodes, ','),
                aten: list(aten, ','),
            });
        }
        Some("model") => {
            let [_, _, kernel, node, file, line, function, code, ..] = cells[..] else { return false };
            let Some(site) = site(file, line, function) else { return false };
            let callers =
                cells.get(8).map(|c| c.split(" <- ").filter_map(stack_site).collect()).unwrap_or_default();
            let kernel_lines = cells
                .get(9)
                .map(|c| c.split(',').filter_map(|n| n.trim().parse().ok()).collect())
                .unwrap_or_default();
            into.model.push(ModelLine {
                pid,
                kernel: kernel.to_string(),
                node: node.to_string(),
                site,
                code: some(code),
                callers,
                kernel_lines,
            });
        }
        Some("jit") => {
            let [_, _, library, name, kernels, source, output, file, line, function, ..] = cells[..] else {
                return false;
            };
            if library.is_empty() {
                return false;
            }
            into.jit.push(JitBuild {
                pid,
                library: library.to_string(),
                name: some(name),
                kernels: list(kernels, ' '),
                source: some(source),
                output: some(output),
                site: site(file, line, function),
            });
        }
        _ => return false,
    }
    true
}

pub use super::names::is_inductor_output;

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(line: &str) -> Vec<&str> {
        line.split('\t').collect()
    }

    #[test]
    fn the_recorders_records_parse_and_bad_ones_do_not() {
        let mut r = Records::default();
        let ind = "inductor\t7\ttriton_red_fused_add_0\t/tmp/torchinductor_u/j2/cj2b.py\t/tmp/torchinductor_u/ag/cag.py\t64\th,getitem\taten.embedding,aten.index";
        assert!(record(&cells(ind), 7, &mut r));
        let model = "model\t7\ttriton_red_fused_add_0\tgetitem\t/w/tiny_model.py\t28\tforward\th = h + t[p]\t/w/run.py:42:main\t49,79";
        assert!(record(&cells(model), 7, &mut r));
        let jit = "jit\t7\tcupy.RawKernel\tscatter_add\tscale scatter_add\t/b/rungs/01-baseline/nvrtc-ab.cu\t-\t/w/n.py\t52\twith_cupy";
        assert!(record(&cells(jit), 7, &mut r));
        assert_eq!(r.inductor[0].nodes, ["h", "getitem"]);
        assert_eq!(r.inductor[0].wrapper_line, 64);
        assert_eq!(r.model[0].kernel_lines, [49, 79]);
        assert_eq!(r.model[0].callers[0].line, 42);
        assert_eq!(r.model[0].site.line, 28);
        assert!(r.jit[0].is_nvrtc() && r.jit[0].output.is_none());
        assert_eq!(r.jit[0].kernels, ["scale", "scatter_add"]);
        for bad in [
            "inductor\t7\tk",
            "model\t7\tk\tn\tf\tx\tfn\tc",
            "jit\t7",
            "launch\t7\tk",
            "inductor\t7\t\t-\tw\t1\t-\t-",
        ] {
            assert!(!record(&cells(bad), 7, &mut r), "{bad}");
        }
    }

    #[test]
    fn inductor_output_is_known_by_its_name_and_folder() {
        assert!(is_inductor_output(
            "/tmp/torchinductor_root/j2/cj2bb7oloszmvp746xw2xvetmctsursybt4s4g7bt7r7nuxxurem.py"
        ));
        assert!(!is_inductor_output(
            "/tmp/torchinductor_root/xx/cj2bb7oloszmvp746xw2xvetmctsursybt4s4g7bt7r7nuxxurem.py"
        ));
        assert!(!is_inductor_output("/w/model.py"));
        assert!(!is_inductor_output("cj2bb7oloszmvp746xw2xvetmctsursybt4s4g7bt7r7nuxxurem.py"));
        assert!(!is_inductor_output("/é/cé2bb7oloszmvp746xw2xvetmctsursybt4s4g7bt7r7nuxxure.py"));
    }
}
