//! `cargo xtask container build NAME`: builds one of the project's images
//! (`containers/NAME.Containerfile`, its own base first when that is missing) with Docker or
//! Podman, shows the build's output on stderr, and prints the tag and the image id that
//! bundles record.
//!
//! Must not: pull or push anything itself (the runtime's build pulls the base), or print
//! anything on stdout but the `TAG ID` line.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::container::{ImageDef, Runtime, IMAGES};
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
        /// Where the Containerfiles are (default: this repository's `containers/`).
        #[arg(long, hide = true)]
        containers_dir: Option<PathBuf>,
    },
}

pub fn run(cmd: ContainerCommand) -> Result<i32> {
    let ContainerCommand::Build { name, runtime, build_args, tag, containers_dir } = cmd;
    if !matches!(runtime, Runtime::Docker | Runtime::Podman) {
        bail!(
            "`container build` uses `docker` or `podman`; for Apptainer build the Docker image, then \
             `apptainer build debug-ima-{name}.sif docker-daemon://IMAGE` (containers/README.md)"
        );
    }
    for a in &build_args {
        if !a.contains('=') {
            bail!("`--build-arg {a}` is not KEY=VALUE");
        }
    }
    let dir = containers_dir.unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new(".")).join("containers")
    });
    let def = ImageDef::find(&name).context("unknown image")?;
    let tag = tag.unwrap_or_else(|| def.tag_for(&build_args));
    let id = build(def, runtime, &dir, &tag, &build_args)?;
    ui::out(&format!("{tag} {id}\n")).context("cannot write to stdout")?;
    Ok(crate::cli::EXIT_OK)
}

/// Builds `def` (its base first when missing and not given as `BASE=`), returns the id.
fn build(def: ImageDef, runtime: Runtime, dir: &Path, tag: &str, build_args: &[String]) -> Result<String> {
    let file = dir.join(format!("{}.Containerfile", def.name));
    if !file.is_file() {
        bail!("`{}` does not exist: run from a checkout of this repository", file.display());
    }
    if let Some(base) = def.base.and_then(ImageDef::find) {
        let given = build_args.iter().any(|a| a.starts_with("BASE="));
        if !given && image_id(runtime, base.tag).is_none() {
            ui::status(&format!("==> {} is missing: building `{}` first", base.tag, base.name));
            build(base, runtime, dir, base.tag, &[])?;
        }
    }
    let argv = def.build_argv(runtime, dir, tag, build_args);
    ui::status(&format!("==> {}", argv.join(" ")));
    // The build's own output goes to stderr: stdout carries only the result.
    let stderr = std::io::stderr();
    let out = std::os::fd::AsFd::as_fd(&stderr).try_clone_to_owned().context("cannot pass stderr on")?;
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .status()
        .with_context(|| format!("cannot start `{}`: is it installed?", argv[0]))?;
    if !status.success() {
        bail!(
            "`{}` failed ({status}); its output is above. Building needs the registry (`nvidia/cuda`) and \
             the network (PyPI, GitHub)",
            argv.join(" ")
        );
    }
    image_id(runtime, tag).with_context(|| format!("the build succeeded but `{tag}` cannot be inspected"))
}

/// The local image id of `tag`, `None` when there is no such image.
fn image_id(runtime: Runtime, tag: &str) -> Option<String> {
    let out = crate::doctor::run_with_timeout(
        Path::new(runtime.name()),
        &["image", "inspect", "--format", "{{.Id}}", tag],
        std::time::Duration::from_secs(30),
    );
    out.success().then(|| out.stdout.trim().to_string()).filter(|s| s.starts_with("sha256:"))
}
