//! The capture of one native launch (`native-capture-PID.json`, written by
//! `ladder/capture_native.c` before each launch of the suspect kernel) and the CUDA C++
//! reproducer written from it: `repro_driver.cu`, which loads the kernel from `kernel.cubin`
//! (the user's translation unit compiled with `nvcc -cubin -lineinfo`, the build step) by its
//! mangled name, allocates a buffer of each recorded allocation's size (its recorded bytes
//! copied in, or zeros), puts the new addresses into the parameters that pointed into them (at
//! the same offsets), and launches it once with the recorded raw parameters through the driver
//! API (`libcuda.so.1`, opened at run time): no declaration of its signature is needed, and a
//! template instantiation or a kernel whose host stub is local launches the same way.
//!
//! Must not: read or write files, run anything, or put anything from the capture into the
//! program but a checked symbol name, numbers and hex digits (a capture is the target's output).

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use super::Expected;

/// The largest allocation the reproducer makes from a capture (64 GiB).
const MAX_ALLOCATION: u64 = 64 << 30;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NativeCapture {
    pub version: u32,
    pub pid: u32,
    pub seq: u64,
    /// The kernel's mangled name (`_Z11scale_writePfix`).
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    pub params: Vec<Param>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Param {
    pub offset: u64,
    pub size: u64,
    /// The parameter's bytes, in hex.
    pub bytes: String,
    /// The device allocation it points into, when it is a device pointer.
    pub allocation: Option<Allocation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Allocation {
    pub base: u64,
    pub size: u64,
    pub offset: u64,
    /// Its bytes in hex, when at most 1 MiB.
    pub values: Option<String>,
}

impl NativeCapture {
    /// The program's input values this capture recorded (the bytes of the allocations its
    /// pointer parameters point into, whose element types it does not know: counted in
    /// bytes) and the parameters they came from (`param 0`); `None` when it holds none.
    pub fn input_values(&self) -> Option<(u64, Vec<String>)> {
        let mut out = (0, Vec::new());
        for (i, p) in self.params.iter().enumerate() {
            if let Some(v) = p.allocation.as_ref().and_then(|a| a.values.as_ref()) {
                out.0 += v.len() as u64 / 2;
                out.1.push(format!("param {i}"));
            }
        }
        (!out.1.is_empty()).then_some(out)
    }
}

fn hex_ok(s: &str) -> bool {
    s.len().is_multiple_of(2) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Reads a native capture, checking what the writer relies on: a symbol of identifier
/// characters, parameters whose bytes are hex of their size, bounded allocations.
pub fn parse(text: &str) -> Result<NativeCapture> {
    let c: NativeCapture =
        serde_json::from_str(text).context("the capture is not the native recorder's JSON")?;
    if c.version != 1 {
        bail!("native capture version {} (this tool reads version 1)", c.version);
    }
    if c.kernel.is_empty() || !c.kernel.chars().all(|ch| ch.is_ascii_alphanumeric() || "_$.".contains(ch)) {
        bail!(
            "the capture's kernel symbol `{}` is not a mangled name",
            crate::model::text::cut(&c.kernel, 80)
        );
    }
    if c.params.len() > 1024 {
        bail!("the capture has {} parameters", c.params.len());
    }
    for p in &c.params {
        if !hex_ok(&p.bytes) || p.bytes.len() as u64 != 2 * p.size || p.size > 32 * 1024 {
            bail!("a parameter's bytes are not {} bytes of hex", p.size);
        }
        if let Some(a) = &p.allocation {
            if a.size > MAX_ALLOCATION || a.offset > a.size || p.size != 8 {
                bail!("a parameter's allocation ({} bytes, offset {}) is not one", a.size, a.offset);
            }
            if let Some(v) = &a.values {
                if !hex_ok(v) || v.len() as u64 != 2 * a.size {
                    bail!("an allocation's bytes are not {} bytes of hex", a.size);
                }
            }
        }
    }
    Ok(c)
}

/// The driver for `c`, written for the fault `expected` (named in its header); and what a reader
/// should know about it.
pub fn write(c: &NativeCapture, expected: &Expected) -> super::python::Written {
    let mut notes = Vec::new();
    let mut s = String::new();
    let _ = writeln!(s, "// A reproducer written by debug-ima (docs/repro.md) for the fault:");
    let _ = writeln!(s, "//   {}", expected.text().replace(['\n', '\r'], " "));
    let _ = writeln!(s, "// from launch {} of `{}` in process {}.", c.seq, c.kernel, c.pid);
    let _ = writeln!(s, "//");
    let _ = writeln!(
        s,
        "// It loads the kernel from kernel.cubin (build.sh makes it from the kernel's source file) and"
    );
    let _ = writeln!(
        s,
        "// launches it once, alone, with the recorded grid, block, shared memory and parameters; each"
    );
    let _ = writeln!(
        s,
        "// allocation a parameter pointed into is made again with its size and its recorded bytes"
    );
    let _ = writeln!(
        s,
        "// (zeros where they were not recorded), the parameter pointing at the same offset into it."
    );
    let _ = writeln!(s, "// Build with `sh build.sh`, run with `./repro`.");
    s.push_str(HEAD);
    let _ = writeln!(s, "static const char KERNEL[] = \"{}\";", c.kernel);
    // Allocations, each once by base.
    let mut bases: Vec<&Allocation> = Vec::new();
    for a in c.params.iter().filter_map(|p| p.allocation.as_ref()) {
        if !bases.iter().any(|b| b.base == a.base) {
            bases.push(a);
        }
    }
    for (i, a) in bases.iter().enumerate() {
        match &a.values {
            Some(v) => {
                let _ = writeln!(s, "static const char A{i}_HEX[] =");
                for chunk in v.as_bytes().chunks(96) {
                    let _ = writeln!(s, "    \"{}\"", String::from_utf8_lossy(chunk));
                }
                let _ = writeln!(s, "    ;");
            }
            None => notes.push(format!(
                "allocation {i} ({} bytes): its bytes were not recorded (over the 1 MiB cap, or the launch was \
                 inside a CUDA graph capture, where no copy can be made): the reproducer fills it with zeros",
                a.size
            )),
        }
    }
    s.push_str(HELPERS);
    let _ = writeln!(s, "int main(int argc, char **argv) {{");
    let _ = writeln!(s, "    const char *cubin = argc > 1 ? argv[1] : \"kernel.cubin\";");
    s.push_str(OPEN);
    for (i, a) in bases.iter().enumerate() {
        let _ = writeln!(s, "    CUdeviceptr a{i} = 0;");
        let _ = writeln!(s, "    TRY(d.mem_alloc(&a{i}, {}));", a.size.max(1));
        match &a.values {
            Some(_) => {
                let _ = writeln!(s, "    TRY(fill(d, a{i}, A{i}_HEX, {}));", a.size);
            }
            None => {
                let _ = writeln!(s, "    TRY(d.memset(a{i}, 0, {}));", a.size);
            }
        }
    }
    for (i, p) in c.params.iter().enumerate() {
        let bytes: Vec<String> =
            p.bytes.as_bytes().chunks(2).map(|h| format!("0x{}", String::from_utf8_lossy(h))).collect();
        let _ = writeln!(s, "    unsigned char p{i}[{}] = {{{}}};", p.size.max(1), bytes.join(", "));
        if let Some(a) = &p.allocation {
            let k = bases.iter().position(|b| b.base == a.base).unwrap_or(0);
            let _ = writeln!(s, "    {{ CUdeviceptr v = a{k} + {}; memcpy(p{i}, &v, 8); }}", a.offset);
        }
    }
    let args: Vec<String> = (0..c.params.len()).map(|i| format!("p{i}")).collect();
    let _ = writeln!(
        s,
        "    void *args[] = {{{}}};",
        if args.is_empty() { "nullptr".into() } else { args.join(", ") }
    );
    if c.shared > 48 * 1024 {
        let _ = writeln!(
            s,
            "    TRY(d.func_set_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, {}));",
            c.shared
        );
    }
    let [gx, gy, gz] = c.grid;
    let [bx, by, bz] = c.block;
    let _ = writeln!(
        s,
        "    CUresult e = d.launch(fn, {gx}, {gy}, {gz}, {bx}, {by}, {bz}, {}, nullptr, args, nullptr);",
        c.shared
    );
    s.push_str(TAIL);
    notes.push(
        "it needs the kernel's source file (build.sh compiles it with `nvcc -cubin -lineinfo`) and nvcc; \
         what the program's host code set up besides the parameters (`__constant__` or `__device__` \
         variables, textures) is not in it"
            .into(),
    );
    super::python::Written { script: s, notes }
}

/// `build.sh`: the kernel's source file (`source`, the argument's default) compiled to
/// `kernel.cubin` with `-lineinfo`, and `repro_driver.cu` into `repro`, beside it.
/// `DEBUG_IMA_ARCH` overrides `-arch=native`.
pub fn build_script(source: &str) -> String {
    format!(
        "#!/bin/sh\n\
         # Builds the reproducer (docs/repro.md): the kernel's source file into kernel.cubin, and\n\
         # repro_driver.cu into ./repro, beside this file. Usage: sh build.sh [SOURCE.cu]\n\
         set -e\n\
         here=$(cd \"$(dirname \"$0\")\" && pwd)\n\
         src=${{1:-{}}}\n\
         arch=${{DEBUG_IMA_ARCH:-native}}\n\
         nvcc -arch=\"$arch\" -cubin -lineinfo -I\"$(dirname \"$src\")\" \"$src\" -o \"$here/kernel.cubin\"\n\
         nvcc \"$here/repro_driver.cu\" -o \"$here/repro\" -ldl\n",
        crate::model::invocation::quote(source)
    )
}

const HEAD: &str = r#"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <dlfcn.h>

"#;

const HELPERS: &str = r#"
// The driver API, from libcuda.so.1 at run time (nothing to link).
struct Driver {
    decltype(&::cuInit) init;
    decltype(&::cuDeviceGet) device_get;
    decltype(&::cuDevicePrimaryCtxRetain) ctx_retain;
    decltype(&::cuCtxSetCurrent) ctx_set;
    decltype(&::cuModuleLoad) module_load;
    decltype(&::cuModuleGetFunction) module_function;
    decltype(&::cuMemAlloc) mem_alloc;
    decltype(&::cuMemcpyHtoD) memcpy_htod;
    decltype(&::cuMemsetD8) memset;
    decltype(&::cuFuncSetAttribute) func_set_attribute;
    decltype(&::cuLaunchKernel) launch;
    decltype(&::cuCtxSynchronize) synchronize;
    decltype(&::cuGetErrorString) error_string;
};

static Driver driver_or_exit() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "repro: cannot open libcuda.so.1: %s\n", dlerror());
        exit(2);
    }
    Driver d;
    d.init = (decltype(d.init))dlsym(lib, "cuInit");
    d.device_get = (decltype(d.device_get))dlsym(lib, "cuDeviceGet");
    d.ctx_retain = (decltype(d.ctx_retain))dlsym(lib, "cuDevicePrimaryCtxRetain");
    d.ctx_set = (decltype(d.ctx_set))dlsym(lib, "cuCtxSetCurrent");
    d.module_load = (decltype(d.module_load))dlsym(lib, "cuModuleLoad");
    d.module_function = (decltype(d.module_function))dlsym(lib, "cuModuleGetFunction");
    d.mem_alloc = (decltype(d.mem_alloc))dlsym(lib, "cuMemAlloc_v2");
    d.memcpy_htod = (decltype(d.memcpy_htod))dlsym(lib, "cuMemcpyHtoD_v2");
    d.memset = (decltype(d.memset))dlsym(lib, "cuMemsetD8_v2");
    d.func_set_attribute = (decltype(d.func_set_attribute))dlsym(lib, "cuFuncSetAttribute");
    d.launch = (decltype(d.launch))dlsym(lib, "cuLaunchKernel");
    d.synchronize = (decltype(d.synchronize))dlsym(lib, "cuCtxSynchronize");
    d.error_string = (decltype(d.error_string))dlsym(lib, "cuGetErrorString");
    return d;
}

static const char *error_of(const Driver &d, CUresult r) {
    const char *s = nullptr;
    if (d.error_string) d.error_string(r, &s);
    return s ? s : "unknown error";
}

#define TRY(x)                                                   \
    do {                                                             \
        CUresult r_ = (x);                                           \
        if (r_ != CUDA_SUCCESS) {                                    \
            fprintf(stderr, "repro: %s: %s\n", #x, error_of(d, r_)); \
            return 2;                                                \
        }                                                            \
    } while (0)

// Copies `n` bytes given as hex to the device.
static CUresult fill(const Driver &d, CUdeviceptr dev, const char *hex, size_t n) {
    unsigned char *host = new unsigned char[n ? n : 1];
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        sscanf(hex + 2 * i, "%2x", &v);
        host[i] = (unsigned char)v;
    }
    CUresult r = d.memcpy_htod(dev, host, n);
    delete[] host;
    return r;
}

"#;

const OPEN: &str = r#"    Driver d = driver_or_exit();
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    TRY(d.init(0));
    TRY(d.device_get(&dev, 0));
    TRY(d.ctx_retain(&ctx, dev));
    TRY(d.ctx_set(ctx));
    TRY(d.module_load(&mod, cubin));
    TRY(d.module_function(&fn, mod, KERNEL));
"#;

const TAIL: &str = r#"    if (e == CUDA_SUCCESS) e = d.synchronize();
    if (e != CUDA_SUCCESS) {
        fprintf(stderr, "repro: %s\n", error_of(d, e));
        return 1;
    }
    printf("repro: the kernel ran without a device error\n");
    return 0;
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(case: &str) -> NativeCapture {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/h200/capture_native")
            .join(case);
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("native-capture-"))
            .unwrap();
        parse(&std::fs::read_to_string(file).unwrap()).unwrap()
    }

    #[test]
    fn the_h200_s_native_captures_read_and_write_a_driver() {
        let oob = recorded("oob_write");
        assert_eq!(oob.kernel, "_Z11scale_writePfix");
        assert_eq!(oob.params.len(), 3);
        assert_eq!(oob.params[2].bytes, "00000000feffffff", "the shift, -(1 << 33)");
        let e = Expected {
            kernel: "scale_write(float*, int, long long)".into(),
            file: None,
            line: None,
            error: "illegal-address".into(),
        };
        let w = write(&oob, &e);
        assert!(w.script.contains("KERNEL[] = \"_Z11scale_writePfix\";"));
        assert!(w.script.contains("d.launch(fn, 16, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr)"));
        assert!(w.script.contains("unsigned char p2[8] = {0x00, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff, 0xff};"));
        let st = recorded("stencil_neighbour");
        // Two pointers into two allocations: two buffers.
        let w = write(&st, &e);
        assert!(
            w.script.contains("CUdeviceptr a1 = 0;") && !w.script.contains("CUdeviceptr a2"),
            "{}",
            w.script
        );
    }

    /// Every C++ reproducer the H200 ran (tests/fixtures/bundles/repro_native), written again
    /// from its capture: the same program, verified or not.
    #[test]
    fn the_writer_writes_the_drivers_the_h200_ran() {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/bundles/repro_native");
        let mut seen = 0;
        for case in std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()) {
            for bundle in std::fs::read_dir(&case).unwrap().map(|e| e.unwrap().path()) {
                let dir = bundle.join("repro");
                let Some(capture) = std::fs::read_dir(&dir)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("native-capture-"))
                else {
                    continue; // cublas_fault: no source, no capture run
                };
                let result: super::super::Outcome =
                    serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
                let c = parse(&std::fs::read_to_string(capture).unwrap()).unwrap();
                let again = write(&c, &result.expected);
                let ran = std::fs::read_to_string(dir.join("repro_driver.cu")).unwrap();
                assert!(
                    again.script == ran,
                    "{}: the writer no longer writes the driver the H200 ran",
                    dir.display()
                );
                seen += 1;
            }
        }
        assert_eq!(seen, 7, "seven C++ cases with a capture");
    }

    #[test]
    fn a_capture_that_breaks_what_the_writer_relies_on_is_refused() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures/h200/capture_native/oob_write/native-capture-915.json"),
        )
        .unwrap();
        for (from, to, why) in [
            (
                "\"kernel\": \"_Z11scale_writePfix\"",
                "\"kernel\": \"x\\\"); system(\\\"rm\"",
                "not a mangled name",
            ),
            ("\"bytes\": \"00100000\"", "\"bytes\": \"0010zz00\"", "not 4 bytes of hex"),
            ("\"version\": 1", "\"version\": 2", "version 2"),
        ] {
            assert!(text.contains(from), "{from}");
            let err = parse(&text.replacen(from, to, 1)).unwrap_err().to_string();
            assert!(err.contains(why), "{from} -> {err}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
        #[test]
        fn garbage_never_panics(garbage in ".{0,300}") {
            let _ = parse(&garbage);
        }
    }
}
