//! A verdict's origin: where the faulting kernel came from when it was not compiled ahead of
//! time from the user's files (docs/provenance.md). torch.compile's Inductor (the generated
//! kernel's file and line, the model lines its FX nodes were traced from, the one the faulting
//! access goes through), an extension built at run time (`torch.utils.cpp_extension`), or an
//! NVRTC program (CuPy, cuda.core), from the launch recorder's records
//! ([`super::provenance`]). For an Inductor kernel whose faulting access is known, the
//! verdict's line becomes the model's line, the generated one kept here.
//!
//! Must not: read files, or name a model line as the faulting one unless the kernel's line
//! leads to exactly one FX node (several fused statements are listed, none chosen).

use super::launch_log::frame_of;
use super::names;
use super::provenance::{InductorKernel, JitBuild, ModelLine, Site, CPP_EXTENSION};
use super::verdict_model::{ModelSite, Origin, OriginKind, Part, Verdict, NO_LINE};
use super::{Evidence, Frame, SourceLoc};

/// The lines the inputs name in the generated file `base` (the device line, an assert's
/// message line, which cuda-gdb may place a line before it).
fn lines_in(inputs: &[Evidence], v: &Verdict, base: &str) -> Vec<u32> {
    let mut out: Vec<u32> =
        v.line.into_iter().filter(|_| v.file.as_deref().map(names::base_name) == Some(base)).collect();
    for f in inputs.iter().flat_map(|e| &e.faults) {
        let frames = f.frames.iter().filter_map(|fr| Some((fr.file.as_deref()?, fr.line?)));
        let places = f.location.iter().chain(&f.inlined).map(|l| (l.file.as_str(), l.line));
        for (file, line) in frames.chain(places) {
            if names::base_name(file) == base && !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}

/// Adds the origin of the verdict's kernel, where the recorder saw where it came from; an
/// Inductor kernel's known faulting statement becomes the verdict's line (and `conclusion`'s).
pub fn attach(mut v: Verdict, conclusion: String, inputs: &[Evidence]) -> (Verdict, String) {
    let origin = inductor(&v, inputs).or_else(|| jit(&v, inputs)).or_else(|| unrecorded_inductor(&v));
    let Some(origin) = origin else { return (v, conclusion) };
    let mut conclusion = conclusion;
    if origin.kind == OriginKind::Inductor && origin.pinned {
        let m = &origin.model[0];
        let (Some(file), Some(line)) = (m.frame.file.clone(), m.frame.line) else { return (v, conclusion) };
        let at = format!("{file}:{line}");
        conclusion = format!("{} in `{}` at {at} (the model's line)", v.error.as_str(), v.kernel);
        v.file = Some(file);
        v.line = Some(line);
        v.unknown.retain(|p| *p != Part::SourceLine);
    }
    v.remarks.retain(|r| !(origin.kind != OriginKind::Inductor && r.starts_with(NO_LINE)));
    v.remarks.push(origin.note.clone());
    v.origin = Some(origin);
    (v, conclusion)
}

fn same_pid(v: &Verdict, pid: u32) -> bool {
    v.pid.is_none_or(|p| p == pid)
}

fn inductor(v: &Verdict, inputs: &[Evidence]) -> Option<Origin> {
    let all: Vec<&InductorKernel> = inputs
        .iter()
        .flat_map(|e| &e.provenance.inductor)
        .filter(|k| k.kernel == v.kernel && same_pid(v, k.pid))
        .collect();
    let line_base = v.file.as_deref().map(names::base_name);
    // The kernel of that name whose file the device named, else the only one.
    let by_file: Vec<&&InductorKernel> =
        all.iter().filter(|k| k.kernel_file.as_deref().map(names::base_name) == line_base).collect();
    let k = match (by_file.first(), all.first()) {
        (Some(k), _) => **k,
        (None, Some(k)) if all.iter().all(|o| o.kernel_file == k.kernel_file) => *k,
        _ => return None,
    };
    let base = k.kernel_file.as_deref().map(names::base_name).unwrap_or_default();
    let generated = match (&k.kernel_file, v.line) {
        (Some(f), Some(l)) if line_base == Some(base) => Some(SourceLoc { file: f.clone(), line: l }),
        _ => None,
    };
    let lines = lines_in(inputs, v, base);
    let rows: Vec<&ModelLine> = inputs
        .iter()
        .flat_map(|e| &e.provenance.model)
        .filter(|m| m.kernel == k.kernel && m.pid == k.pid && k.nodes.contains(&m.node))
        .collect();
    let hit: Vec<&&ModelLine> =
        rows.iter().filter(|m| m.kernel_lines.iter().any(|l| lines.contains(l))).collect();
    let pinned_site = hit.first().filter(|h| hit.iter().all(|o| o.site == h.site)).map(|h| (**h).clone());
    let mut model: Vec<ModelSite> = Vec::new();
    let mut seen: Vec<(String, Site)> = Vec::new();
    for m in pinned_site.iter().chain(rows.iter().copied()) {
        if seen.iter().any(|(n, f)| *n == m.node && *f == m.site) {
            continue;
        }
        seen.push((m.node.clone(), m.site.clone()));
        model.push(ModelSite {
            node: m.node.clone(),
            frame: frame_of(&m.site),
            code: m.code.clone(),
            callers: m.callers.iter().map(frame_of).collect(),
        });
    }
    let pinned = pinned_site.is_some();
    let gen = generated
        .as_ref()
        .map(|g| format!("{}:{}", names::base_name(&g.file), g.line))
        .unwrap_or_else(|| base.to_string());
    let note = if pinned {
        let m = &model[0];
        format!(
            "generated by torch.compile (Inductor): the faulting access of {gen} goes through `{}`, traced from {}; \
             the generated kernel and its output code are kept in the bundle's sources/",
            m.node,
            frame_short(&m.frame)
        )
    } else if !model.is_empty() {
        let list: Vec<String> =
            model.iter().map(|m| format!("{} ({})", frame_short(&m.frame), m.node)).collect();
        format!(
            "generated by torch.compile (Inductor) from {} model statement(s): {}; which of them the faulting access \
             of {gen} belongs to is not known",
            model.len(),
            list.join(", ")
        )
    } else {
        format!(
            "generated by torch.compile (Inductor) from the FX nodes [{}]; their model lines were not recorded (the \
             graph was loaded precompiled, without tracing: a run with the compile cache off, \
             TORCHINDUCTOR_FORCE_DISABLE_CACHES=1, records them)",
            k.nodes.join(", ")
        )
    };
    let mut files: Vec<String> = k.kernel_file.iter().cloned().collect();
    files.push(k.wrapper.clone());
    Some(Origin {
        kind: OriginKind::Inductor,
        library: "torch.compile (Inductor)".into(),
        name: None,
        generated,
        files,
        model,
        pinned,
        aten: k.aten.clone(),
        built_at: Some(Frame {
            function: None,
            file: Some(k.wrapper.clone()),
            line: Some(k.wrapper_line),
            module: None,
            python: true,
        }),
        note,
    })
}

/// A kernel of torch.compile's output that no recorder saw (`dump PID`, `analyze` of logs
/// without `launches.log`): its name and generated file say what it is, nothing more.
fn unrecorded_inductor(v: &Verdict) -> Option<Origin> {
    let file = v.file.as_deref()?;
    let base = names::base_name(file);
    let generated = names::is_inductor_output(file)
        || (base.len() == 55 && names::is_inductor_output(&format!("{}/{base}", &base[1..3])));
    if !generated || !v.kernel.starts_with("triton_") {
        return None;
    }
    Some(Origin {
        kind: OriginKind::Inductor,
        library: "torch.compile (Inductor)".into(),
        name: None,
        generated: v.line.map(|line| SourceLoc { file: file.to_string(), line }),
        files: vec![file.to_string()],
        model: Vec::new(),
        pinned: false,
        aten: Vec::new(),
        built_at: None,
        note: format!(
            "generated by torch.compile (Inductor): {base} is its output, not a file you edit; the model's \
             lines come from a run under debug-ima, whose launch recorder sees the compile (docs/provenance.md)"
        ),
    })
}

fn jit(v: &Verdict, inputs: &[Evidence]) -> Option<Origin> {
    let key = names::kernel_key(&v.kernel);
    let key = key.rsplit("::").next().unwrap_or(&key);
    let builds: Vec<&JitBuild> = inputs
        .iter()
        .flat_map(|e| &e.provenance.jit)
        .filter(|b| same_pid(v, b.pid) && b.kernels.iter().any(|k| k == key))
        .collect();
    let b = *builds.first()?;
    if builds.iter().any(|o| o.library != b.library || o.source != b.source) {
        return None;
    }
    let by = b.site.as_ref().map(|s| format!(" at {}", frame_short(&frame_of(s)))).unwrap_or_default();
    let name = b.name.as_deref().map(|n| format!(" `{n}`")).unwrap_or_default();
    let src = b.source.as_deref().map(names::base_name).unwrap_or("?");
    let (kind, note) = if b.library == CPP_EXTENSION {
        let note = match v.line {
            Some(_) => format!("a JIT-built extension{name} (torch.utils.cpp_extension{by}), source {src}"),
            None => format!(
                "a JIT-built extension{name} (torch.utils.cpp_extension{by}), source {src}, built without line info: \
                 ninja does not rebuild it for NVCC_PREPEND_FLAGS; the rebuild for run-time compiled code builds it \
                 again with -lineinfo in a fresh TORCH_EXTENSIONS_DIR"
            ),
        };
        (OriginKind::JitExtension, note)
    } else {
        let how = if b.library == "cuda.core.Program" {
            "ProgramOptions(lineinfo=True)"
        } else {
            "CUPY_CUDA_COMPILE_WITH_DEBUG=1 (the rebuild for run-time compiled code sets it)"
        };
        let note = match v.line {
            Some(l) => format!(
                "compiled from a string at run time by {}{by}: line {l} of that string, saved in the bundle as {src}",
                b.library
            ),
            None => format!(
                "compiled from a string at run time by {}{by}, without line info: no file holds it; the string is \
                 saved in the bundle as {src}; a line needs {how}",
                b.library
            ),
        };
        (OriginKind::Nvrtc, note)
    };
    let generated = match (&v.file, v.line) {
        (Some(f), Some(l)) if kind == OriginKind::Nvrtc => Some(SourceLoc { file: f.clone(), line: l }),
        _ => None,
    };
    Some(Origin {
        kind,
        library: b.library.clone(),
        name: b.name.clone(),
        generated,
        files: b.source.iter().chain(&b.output).cloned().collect(),
        model: Vec::new(),
        pinned: false,
        aten: Vec::new(),
        built_at: b.site.as_ref().map(frame_of),
        note,
    })
}

/// `file:line` with the file's base name (the full path is in the origin's fields).
fn frame_short(f: &Frame) -> String {
    let file = f.file.as_deref().map(names::base_name).unwrap_or("?");
    match f.line {
        Some(l) => format!("{file}:{l}"),
        None => file.to_string(),
    }
}
