//! `cargo xtask container build NAME`: builds one of the project's images
//! (`containers/NAME.Containerfile`, its own base first when that is missing) with Docker or
//! Podman, shows the build's output on stderr, and prints the tag and the image id that
//! bundles record. The files are the clone's `containers/`, or, for an installed tool whose
//! clone is gone, the copies embedded in the binary, written into its cache folder
//! (`commands::builtin_files`).
//!
//! Must not: pull or push anything itself (the runtime's build pulls the base), or print
//! anything on stdout but the `TAG ID` line.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::{builtin_files, Outcome};
use crate::launch::container::{parse_inspect, ImageDef, RuntimeArgv, IMAGES};
use crate::launch::images;
use crate::launch::run_short;
use crate::model::{Exit, Runtime};
use crate::process::{self, Control, Interrupt, Spec};
use crate::ui;

#[derive(Debug, clap::Subcommand)]
pub enum ContainerCommand {
    /// Build an image from containers/NAME.Containerfile and print its tag and id.
    Build {
        /// `cuda` (the toolchain), `pytorch` (plus PyTorch), `vllm` (plus vLLM from source
        /// with line info).
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(IMAGES.map(|d| d.name)))]
        name: String,
        /// Docker or Podman (Apptainer builds a `.sif` from the Docker image: see
        /// containers/README.md).
        #[arg(long, value_enum, default_value = "docker")]
        runtime: Runtime,
        /// Passed to the build (repeatable): `--build-arg VLLM_REF=v0.11.0`.
        #[arg(long = "build-arg", value_name = "KEY=VALUE")]
        build_args: Vec<String>,
        /// The tag (default: `debug-ima/NAME:VERSION`, see containers/README.md).
        #[arg(long)]
        tag: Option<String>,
        /// Where the Containerfiles are (default: this repository's `containers/`, else their
        /// copies in the cache folder).
        #[arg(long, hide = true)]
        containers_dir: Option<PathBuf>,
    },
}

pub fn run(cmd: ContainerCommand) -> Result<Outcome> {
    let ContainerCommand::Build { name, runtime, build_args, tag, containers_dir } = cmd;
    let dir = match containers_dir {
        Some(dir) => dir,
        None => builtin_files::ensure_containers()?,
    };
    let readme = images::readme_in(&dir);
    match runtime {
        Runtime::Docker | Runtime::Podman => {}
        Runtime::Apptainer => bail!(
            "`container build` uses `docker` or `podman`; for Apptainer build the Docker image, then \
             `apptainer build debug-ima-{name}.sif docker-daemon://IMAGE` ({readme})"
        ),
        Runtime::None => bail!(
            "`--runtime none` has no image to build: `none` runs the ladder on the host, without a \
             container. Build with `cargo xtask container build {name}` (Docker) or `--runtime podman`, \
             or leave `--container` out of `debug-ima` to run on the host"
        ),
    }
    for a in &build_args {
        if !a.contains('=') {
            bail!("`--build-arg {a}` is not KEY=VALUE");
        }
    }
    let def = ImageDef::find(&name).context("unknown image")?;
    let tag = tag.unwrap_or_else(|| def.tag_for(&build_args));
    let interrupt = Interrupt::install()?;
    let id = build(def, runtime, &dir, &tag, &build_args, &interrupt)?;
    if interrupt.is_set() {
        return Ok(Outcome::Interrupted);
    }
    ui::out(&format!("{tag} {id}\n")).context("cannot write to stdout")?;
    Ok(Outcome::Done)
}

/// Builds `def` (its base first when missing and not given as `BASE=`), returns the id.
fn build(
    def: ImageDef,
    runtime: Runtime,
    dir: &Path,
    tag: &str,
    build_args: &[String],
    interrupt: &Interrupt,
) -> Result<String> {
    let file = dir.join(format!("{}.Containerfile", def.name));
    if !file.is_file() {
        bail!(
            "`{}` does not exist: give the folder that holds the project's Containerfiles, or leave \
             `--containers-dir` out to build from the copies this tool carries",
            file.display()
        );
    }
    if let Some(base) = def.base.and_then(ImageDef::find) {
        let given = build_args.iter().any(|a| a.starts_with("BASE="));
        if !given && image_id(runtime, base.tag).is_none() {
            ui::status(&format!("==> {} is missing: building `{}` first", base.tag, base.name));
            build(base, runtime, dir, base.tag, &[], interrupt)?;
        }
    }
    let argv = def.build_argv(runtime, dir, tag, build_args);
    ui::status(&format!("==> {}", argv.join(" ")));
    // The build's own output goes to stderr, line by line: stdout carries only the result.
    // It is logged too, and the log kept when the build fails.
    let log = std::env::temp_dir().join(format!("debug-ima-build-{}-{}.log", def.name, std::process::id()));
    let spec = Spec { interrupt: interrupt.clone(), ..Spec::new(&argv[0], &argv[1..], &log, &log) };
    let o = process::run(&spec, &mut |_, line| {
        ui::status(line);
        Control::Continue
    })
    .with_context(|| format!("cannot start `{}`: is it installed?", argv[0]))?;
    match o.exit {
        Exit::Code(0) => {
            let _ = std::fs::remove_file(&log);
        }
        Exit::Interrupted => {
            bail!("interrupted: `{}` was stopped; its output is in `{}`", argv[0], log.display())
        }
        other => bail!(
            "`{}` failed ({}); its output is above and in `{}`. Building needs the registry (`nvidia/cuda`) \
             and the network (PyPI, GitHub)",
            argv.join(" "),
            other.text(),
            log.display()
        ),
    }
    image_id(runtime, tag).with_context(|| format!("the build succeeded but `{tag}` cannot be inspected"))
}

/// The local image id of `tag`, `None` when there is no such image.
fn image_id(runtime: Runtime, tag: &str) -> Option<String> {
    let out = run_short(&runtime.inspect_image(tag))?;
    let id = out.success().then(|| parse_inspect(out.stdout.trim()).0).flatten()?;
    id.starts_with("sha256:").then_some(id)
}
