//! Loading and parsing recipes: strict YAML with `file:line:column` errors, size and
//! alias/depth limits checked before parsing, and the raw shapes as written (every field
//! checked as it is read). All YAML reading of the project is here.
//!
//! Must not: spawn, print or write files; it reads files only in [`load`] and [`load_file`],
//! and only regular ones (a FIFO or a device given as the recipe is refused, never opened).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::Read as _;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::findings::yaml_bounds::{self, Bound, Limits};
use crate::model::{Launcher, RungId, Runtime};

use super::dirs::builtin_dir;
use super::errors::*;
use super::template::*;
use super::types::*;
use super::words::*;

// ---------------------------------------------------------------------------------------
// Loading and parsing
// ---------------------------------------------------------------------------------------

/// Loads a built-in recipe by name, or a recipe file by path.
pub fn load(name_or_path: &str) -> Result<Recipe> {
    if let Some(text) = builtin_text(name_or_path) {
        return parse(text, RecipeSource::Builtin(name_or_path.to_string()), builtin_dir());
    }
    let path = Path::new(name_or_path);
    let looks_like_path = name_or_path.contains('/')
        || name_or_path.ends_with(".yaml")
        || name_or_path.ends_with(".yml")
        || path.exists();
    if !looks_like_path {
        let near = builtin_names().iter().find(|n| edit_distance(n, &name_or_path.to_ascii_lowercase()) <= 2);
        bail!(
            "unknown recipe `{name_or_path}`{}: built-in recipes are {}; or pass a path to a .yaml file",
            near.map(|n| format!(" (did you mean `{n}`?)")).unwrap_or_default(),
            builtin_names().join(", ")
        );
    }
    load_file(path)
}

/// Reads and parses a recipe file (at most [`MAX_RECIPE_BYTES`]).
pub fn load_file(path: &Path) -> Result<Recipe> {
    let label = path.display();
    let file = crate::files::open_regular(path).with_context(|| {
        format!(
            "cannot read recipe `{label}`: check the path, or use a built-in recipe ({})",
            builtin_names().join(", ")
        )
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_RECIPE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read recipe `{label}`"))?;
    if bytes.len() > MAX_RECIPE_BYTES {
        bail!(
            "{label}: larger than {} KiB; a recipe is a short YAML file (see docs/recipes.md)",
            MAX_RECIPE_BYTES / 1024
        );
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "{label}: not UTF-8 text (invalid byte at offset {}); a recipe is a YAML file",
            e.utf8_error().valid_up_to()
        )
    })?;
    let abs = std::path::absolute(path).with_context(|| format!("cannot make `{label}` absolute"))?;
    let dir = abs.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
    parse(&text, RecipeSource::File(path.to_path_buf()), normalize(&dir))
}

/// Parses and validates a recipe. Pure: `dir` becomes `{recipe_dir}`; `source` names the
/// file in errors (`recipes/x.yaml:LINE:COLUMN: message`).
pub fn parse(text: &str, source: RecipeSource, dir: PathBuf) -> Result<Recipe> {
    let label = source.label();
    // A byte-order mark (Windows editors write one) is no part of the first key: without this
    // the first field (`version`) reads as a key of its own and the file "misses" it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.len() > MAX_RECIPE_BYTES {
        bail!(
            "{label}: larger than {} KiB; a recipe is a short YAML file (see docs/recipes.md)",
            MAX_RECIPE_BYTES / 1024
        );
    }
    if is_blank_yaml(text) {
        bail!("{label}: the file is empty: a recipe needs `version`, `name`, `description` and `run` (see docs/recipes.md)");
    }
    // Size, nesting, anchors and what the aliases expand to, before libyaml sees the text:
    // libyaml slows down quadratically with flow nesting (`{a: {a: ...`), and a few hundred
    // bytes of aliases of aliases expand to gigabytes.
    bounded(text, &label)?;
    // First pass: only the declared variables' names, so that the strict pass can point at
    // an unknown `{reference}` where it stands. A failure here is reported by the strict pass;
    // the names stay those of the whole text while the strict passes blank blocks with errors
    // (a blanked `variables` would make every reference unknown).
    let mut declared = prepass(text);
    let raw = strict_passes(&label, text, &REQUIRED_KEYS, |t, variables_blanked| {
        if declared.is_none() && !variables_blanked {
            declared = prepass(t);
        }
        let _guard = DeclaredGuard::set(declared.clone());
        serde_yaml::from_str::<RawRecipe>(t).map_err(|e| pass_error(t, e))
    })?;
    let recipe = raw.into_recipe(source, dir, text);
    let failed = [check_references(&recipe, text), check_env_remove(&recipe), check_hang_after(&recipe)];
    at_once(&label, failed.into_iter().filter_map(Result::err).collect(), false)?;
    Ok(recipe)
}

/// The top-level keys of [`RawRecipe`] without a default, in its order.
const REQUIRED_KEYS: [&str; 4] = ["version", "name", "description", "run"];

/// The declared variables' names, when the text reads as a mapping whose `variables` (if
/// any) is a mapping.
fn prepass(text: &str) -> Option<BTreeSet<String>> {
    serde_yaml::from_str::<Prepass>(text)
        .ok()
        .map(|p| p.variables.map(|v| v.into_keys().collect::<BTreeSet<_>>()).unwrap_or_default())
}

/// Refuses a recipe over the limits of [`Limits::RECIPE`] (see [`crate::findings::yaml_bounds`]),
/// naming the file, the place and what to do.
fn bounded(text: &str, label: &str) -> Result<()> {
    let limits = Limits { max_bytes: MAX_RECIPE_BYTES, ..Limits::RECIPE };
    match yaml_bounds::check(text, &limits) {
        Ok(()) => Ok(()),
        Err(r) => {
            let advice = match r.bound {
                Bound::Depth => "a recipe needs a few",
                Bound::Size => "a recipe is a short YAML file (see docs/recipes.md)",
                Bound::Anchors | Bound::Aliases | Bound::Expansion => {
                    "a recipe needs few or no aliases: write the values out, or share them through \
                     `variables` and `{name}` templates (see docs/recipes.md)"
                }
            };
            bail!("{label}:{r}; {advice}")
        }
    }
}

/// Cuts a message that quotes a huge value, and keeps it on one line: a quoted name or value
/// holding a line break (a key run together with the next lines) shows it as `\n`, so that
/// every error stays one line of the list.
fn shorten(msg: String) -> String {
    const MAX: usize = 400;
    let msg = if msg.contains(['\n', '\r']) { msg.replace('\n', "\\n").replace('\r', "\\r") } else { msg };
    if msg.len() <= MAX {
        return msg;
    }
    let kept = crate::model::text::cut(&msg, MAX);
    format!("{kept}... ({} bytes cut)", msg.len() - kept.len())
}

/// A strict pass's error: serde's place, and its message without it, the Rust types named
/// as YAML, a near name suggested ([`with_suggestion`]).
fn pass_error(text: &str, e: serde_yaml::Error) -> PassError {
    let mut msg = shorten(e.to_string());
    let at = e.location().map(|loc| (loc.line(), loc.column()));
    if let Some((line, column)) = at {
        let suffix = format!(" at line {line} column {column}");
        if let Some(i) = msg.rfind(&suffix) {
            msg.replace_range(i..i + suffix.len(), "");
        }
        if msg.starts_with("EOF while parsing") && is_blank_yaml(text) {
            msg = "the file is empty".to_string();
        }
    }
    PassError { at, msg: with_suggestion(friendly_struct_names(&msg)) }
}

/// serde names the Rust type in `expected struct RawRun`; say what the YAML needs instead.
fn friendly_struct_names(msg: &str) -> String {
    let mut out = msg.to_string();
    while let Some(i) = out.find("struct Raw") {
        let end = out[i + 10..].find(|c: char| !c.is_ascii_alphanumeric()).map_or(out.len(), |j| i + 10 + j);
        let what = match &out[i + 10..end] {
            "Recipe" => "a mapping with `version`, `name`, `description` and `run`",
            "Build" | "Run" => "a mapping with `command`",
            "Collect" => "a mapping with `name` and `command`",
            "ContainerFields" => CONTAINER_EXPECTING,
            _ => "a mapping",
        };
        out.replace_range(i..end, what);
    }
    out
}

// The raw shapes, as written in YAML. `deny_unknown_fields` everywhere; strings that may hold
// `{variable}`s are checked as they are read, so errors carry their line and column.

#[derive(Deserialize)]
struct Prepass {
    #[serde(default)]
    variables: Option<BTreeMap<String, IgnoredAny>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecipe {
    #[allow(dead_code)]
    version: Version,
    name: RecipeName,
    description: String,
    #[serde(default)]
    python: bool,
    #[serde(default)]
    variables: Option<UniqueMap<VarName, RawVariable>>,
    #[serde(default)]
    collect: Option<CollectList>,
    #[serde(default)]
    knobs: Option<KnobList>,
    #[serde(default)]
    build: Option<RawBuild>,
    run: RawRun,
    #[serde(default)]
    rungs: Option<RawRungs>,
    #[serde(default)]
    container: Option<RawContainer>,
    #[serde(default)]
    launch: Option<LauncherName>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariable {
    #[serde(default)]
    description: String,
    #[serde(default)]
    default: Option<DefaultValue>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBuild {
    command: Command,
    #[serde(default)]
    cwd: Option<Tpl>,
    #[serde(default)]
    env: Option<UniqueMap<EnvName, Tpl>>,
    #[serde(default)]
    env_remove: Option<EnvNameList>,
    #[serde(default)]
    timeout: Option<Timeout>,
    #[serde(default)]
    binaries: Option<Paths>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    command: Command,
    #[serde(default)]
    cwd: Option<Tpl>,
    #[serde(default)]
    env: Option<UniqueMap<EnvName, Tpl>>,
    #[serde(default)]
    env_remove: Option<EnvNameList>,
    #[serde(default)]
    timeout: Option<Timeout>,
    #[serde(default)]
    hang_after: Option<Timeout>,
    #[serde(default)]
    launch_blocking: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCollect {
    name: CollectName,
    command: Command,
    #[serde(default)]
    timeout: Option<Timeout>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKnob {
    name: KnobName,
    description: String,
    #[serde(default)]
    env: Option<UniqueMap<EnvName, Tpl>>,
    #[serde(default)]
    env_remove: Option<EnvNameList>,
    #[serde(default)]
    args_add: Option<Args>,
    #[serde(default)]
    args_remove: Option<Args>,
}

/// `rungs:`: a mapping keyed by rung name ([`RungId::from_name`]: the ladder's rungs, each
/// once), each value the rung's options, of the keys that rung takes ([`RungId::options`]).
struct RawRungs(BTreeMap<RungId, RungOptions>);

/// One rung's options as written: every key any rung takes. Which of them a rung takes is
/// checked as its keys are read ([`OptionsOf`]), so that a key the rung does not take is
/// refused where it stands.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRungOptions {
    enabled: Option<bool>,
    timeout: Option<Timeout>,
    #[serde(default)]
    env: Option<UniqueMap<EnvName, Tpl>>,
    #[serde(default)]
    args: Option<Vec<Tpl>>,
    debug: Option<DebugInfo>,
}

impl RawRungOptions {
    fn into_options(self) -> RungOptions {
        RungOptions {
            enabled: self.enabled,
            timeout: self.timeout.map(|t| t.0),
            env: env_map(self.env),
            args: self.args.unwrap_or_default().into_iter().map(|a| a.0).collect(),
            debug: self.debug,
        }
    }
}

impl<'de> Deserialize<'de> for RawRungs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawRungs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<RawRungs, A::Error> {
                let mut out = BTreeMap::new();
                let mut seen = BTreeSet::new();
                while let Some(RungKey(id)) = map.next_key()? {
                    if !seen.insert(id) {
                        return Err(de::Error::duplicate_field(id.name()));
                    }
                    // `rung: ~` (or nothing) gives no options, as if the key were absent.
                    if let Some(o) = map.next_value_seed(OptionsOf(id))? {
                        out.insert(id, o.into_options());
                    }
                }
                Ok(RawRungs(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A key of `rungs:`: the name of a rung of the ladder.
struct RungKey(RungId);

impl<'de> Deserialize<'de> for RungKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RungKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("field identifier")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<RungKey, E> {
                RungId::from_name(v).map(RungKey).ok_or_else(|| E::unknown_field(v, &RungId::NAMES))
            }
        }
        d.deserialize_identifier(V)
    }
}

/// The options of rung `.0` (`None` for `~`): a mapping of the keys it takes.
struct OptionsOf(RungId);

impl<'de> DeserializeSeed<'de> for OptionsOf {
    type Value = Option<RawRungOptions>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        struct V(&'static [&'static str]);
        impl<'de> Visitor<'de> for V {
            type Value = Option<RawRungOptions>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping")
            }
            fn visit_none<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
                d.deserialize_map(self)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Self::Value, A::Error> {
                let keys = TakenKeys { map, taken: self.0 };
                RawRungOptions::deserialize(de::value::MapAccessDeserializer::new(keys)).map(Some)
            }
        }
        d.deserialize_option(V(self.0.options()))
    }
}

/// A rung's options mapping, passing on only the keys the rung takes (`taken`): another is
/// refused as the key is read, so the error carries the key's line and column.
struct TakenKeys<A> {
    map: A,
    taken: &'static [&'static str],
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for TakenKeys<A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, A::Error> {
        self.map.next_key_seed(TakenKey { seed, taken: self.taken })
    }
    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> std::result::Result<S::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// One key of a rung's options, refused unless the rung takes it, then read by `seed`.
struct TakenKey<K> {
    seed: K,
    taken: &'static [&'static str],
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for TakenKey<K> {
    type Value = K::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<K::Value, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de, K: DeserializeSeed<'de>> Visitor<'de> for TakenKey<K> {
    type Value = K::Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("field identifier")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<K::Value, E> {
        if !self.taken.contains(&v) {
            return Err(E::unknown_field(v, self.taken));
        }
        self.seed.deserialize(de::value::StrDeserializer::new(v))
    }
}

const CONTAINER_EXPECTING: &str = "a mapping with `runtime`, `image`, `mounts` or `gpus`";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContainerFields {
    #[serde(default)]
    runtime: Option<RuntimeName>,
    #[serde(default)]
    image: Option<Image>,
    #[serde(default)]
    mounts: Option<Mounts>,
    #[serde(default)]
    gpus: Option<bool>,
}

/// `container:`, checked as a whole inside its mapping, so that an error about a key that is
/// missing carries the mapping's position (as `missing field` does).
struct RawContainer(RawContainerFields);

impl<'de> Deserialize<'de> for RawContainer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawContainer;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(CONTAINER_EXPECTING)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<RawContainer, A::Error> {
                let c = RawContainerFields::deserialize(de::value::MapAccessDeserializer::new(map))?;
                match &c.runtime {
                    Some(RuntimeName(rt)) if *rt != Runtime::None && c.image.is_none() => {
                        Err(de::Error::custom(format!(
                            "`runtime: {0}` needs an image: add `image:` (a pinned reference such as \
                             `debug-ima/cuda:13.0.1@sha256:...`, or an Apptainer `.sif` file), or leave \
                             `runtime` out and pass `--container {0} --image IMAGE`",
                            rt.name()
                        )))
                    }
                    _ => Ok(RawContainer(c)),
                }
            }
        }
        d.deserialize_map(V)
    }
}

fn env_map(env: Option<UniqueMap<EnvName, Tpl>>) -> BTreeMap<String, String> {
    env.map(|m| m.0.into_iter().map(|(k, v)| (k.0, v.0)).collect()).unwrap_or_default()
}

impl RawRecipe {
    fn into_recipe(self, source: RecipeSource, dir: PathBuf, text: &str) -> Recipe {
        let variables = self
            .variables
            .map(|m| {
                m.0.into_iter()
                    .map(|(k, v)| {
                        (k.0, Variable { description: v.description, default: v.default.map(|d| d.0) })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let collect = self
            .collect
            .map(|c| {
                c.0.into_iter()
                    .map(|c| CollectTemplate {
                        name: c.name.0,
                        command: c.command.0,
                        timeout: c.timeout.map(|t| t.0),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let knobs = self
            .knobs
            .map(|k| {
                k.0.into_iter()
                    .map(|k| KnobTemplate {
                        name: k.name.0,
                        description: k.description,
                        env: env_map(k.env),
                        env_remove: k.env_remove.map(|l| l.0).unwrap_or_default(),
                        args_add: k.args_add.map(|a| a.0).unwrap_or(Words::List(Vec::new())),
                        args_remove: k.args_remove.map(|a| a.0).unwrap_or(Words::List(Vec::new())),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let build = self.build.map(|b| StepTemplate {
            command: b.command.0,
            cwd: b.cwd.map(|c| c.0),
            env: env_map(b.env),
            env_remove: b.env_remove.map(|l| l.0).unwrap_or_default(),
            timeout: b.timeout.map(|t| t.0),
            binaries: b.binaries.map(|p| p.0).unwrap_or(Words::List(Vec::new())),
        });
        let run = StepTemplate {
            command: self.run.command.0,
            cwd: self.run.cwd.map(|c| c.0),
            env: env_map(self.run.env),
            env_remove: self.run.env_remove.map(|l| l.0).unwrap_or_default(),
            timeout: self.run.timeout.map(|t| t.0),
            binaries: Words::List(Vec::new()),
        };
        let hang_after = self.run.hang_after.map(|t| t.0);
        let launch_blocking = self.run.launch_blocking;
        let rungs = self.rungs.map(|RawRungs(r)| r).unwrap_or_default();
        let container = self.container.map(|RawContainer(c)| ContainerTemplate {
            runtime: c.runtime.map(|r| r.0),
            image: c.image.map(|i| i.0),
            mounts: c.mounts.map(|m| m.0).unwrap_or(Words::List(Vec::new())),
            gpus: c.gpus.unwrap_or(true),
        });
        Recipe {
            name: self.name.0,
            description: self.description,
            python: self.python,
            variables,
            collect,
            knobs,
            build,
            run,
            hang_after,
            launch_blocking,
            rungs,
            container,
            launch: self.launch.map(|l| l.0),
            source,
            dir,
            text: text.to_string(),
        }
    }
}

// The variables declared by the recipe being parsed, for the strict pass's checks. Set only
// around one `serde_yaml::from_str` call on this thread; `None` when the first pass failed.
thread_local! {
    static DECLARED: RefCell<Option<BTreeSet<String>>> = const { RefCell::new(None) };
}

struct DeclaredGuard;

impl DeclaredGuard {
    fn set(names: Option<BTreeSet<String>>) -> DeclaredGuard {
        DECLARED.with(|d| *d.borrow_mut() = names);
        DeclaredGuard
    }
}

impl Drop for DeclaredGuard {
    fn drop(&mut self) {
        DECLARED.with(|d| *d.borrow_mut() = None);
    }
}

/// Checks a template's syntax and, when the declared variables are known, its references.
fn check_template(t: &str, builtins_only: bool) -> std::result::Result<(), String> {
    for name in references(t)? {
        if BUILTIN_VARIABLES.contains(&name) {
            continue;
        }
        if builtins_only {
            return Err(format!(
                "`{{{name}}}`: a default can only use the built-in variables ({}); write `{{{{` for a literal brace",
                builtin_list()
            ));
        }
        let unknown =
            DECLARED.with(|d| d.borrow().as_ref().map(|set| (!set.contains(name)).then(|| set.clone())));
        if let Some(Some(declared)) = unknown {
            return Err(unknown_variable_message(name, &declared));
        }
    }
    Ok(())
}

/// A string that may hold `{variable}`s.
struct Tpl(String);

impl<'de> Deserialize<'de> for Tpl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr { expecting: "a string", check: |s| check_template(s, false) }).map(Tpl)
    }
}

/// A variable's default: may use the built-in variables only.
struct DefaultValue(String);

impl<'de> Deserialize<'de> for DefaultValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr { expecting: "a string", check: |s| check_template(s, true) })
            .map(DefaultValue)
    }
}

/// `container.runtime`: one of [`Runtime::ALL`] by name.
struct RuntimeName(Runtime);

impl<'de> Deserialize<'de> for RuntimeName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RuntimeName;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a container runtime: {}", runtime_names())
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<RuntimeName, E> {
                Runtime::parse(v).map(RuntimeName).ok_or_else(|| {
                    E::custom(format!(
                        "unknown container runtime `{}`: use {}",
                        v.escape_debug(),
                        runtime_names()
                    ))
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// `launch`: one of [`Launcher::ALL`] by name.
struct LauncherName(Launcher);

impl<'de> Deserialize<'de> for LauncherName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LauncherName;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a launcher: `host`, `slurm` or `ssh`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<LauncherName, E> {
                Launcher::parse(v).map(LauncherName).ok_or_else(|| {
                    E::custom(format!(
                        "unknown launcher `{}`: use `host`, `slurm` or `ssh`",
                        v.escape_debug()
                    ))
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// "`docker`, `podman`, `apptainer` or `none`".
fn runtime_names() -> String {
    let names: Vec<String> = Runtime::ALL.iter().map(|r| format!("`{}`", r.name())).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// `container.image`: a non-blank string that may hold `{variable}`s.
struct Image(String);

impl<'de> Deserialize<'de> for Image {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr {
            expecting: "an image reference, or an Apptainer `.sif` file",
            check: |s| {
                if s.trim().is_empty() {
                    return Err(
                        "the image is empty: give an image reference (`debug-ima/cuda:13.0.1@sha256:...`) \
                         or an Apptainer `.sif` file, or leave `image` out"
                            .to_string(),
                    );
                }
                check_template(s, false)
            },
        })
        .map(Image)
    }
}

/// One entry of `container.mounts` given in a list: a non-empty path.
struct MountPath(String);

impl<'de> Deserialize<'de> for MountPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr {
            expecting: "a path",
            check: |s| {
                if s.is_empty() {
                    return Err(EMPTY_MOUNT.to_string());
                }
                check_template(s, false)
            },
        })
        .map(MountPath)
    }
}

const EMPTY_MOUNT: &str =
    "an empty path: each entry of `mounts` is a host folder mounted at the same path in the container";

/// `container.mounts`: paths, as a list or a string split into words; no empty one.
struct Mounts(Words);

impl<'de> Deserialize<'de> for Mounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(WordsVisitor { command: false, mounts: true }).map(Mounts)
    }
}

struct RecipeName(String);

impl<'de> Deserialize<'de> for RecipeName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr { expecting: "a recipe name", check: check_recipe_name }).map(RecipeName)
    }
}

fn check_recipe_name(s: &str) -> std::result::Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.as_bytes()[0].is_ascii_alphanumeric()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid recipe name `{}`: use 1 to 64 letters, digits, `-`, `_` or `.`, starting with a letter or digit (it names the bundle directory)",
            s.escape_debug()
        ))
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct VarName(String);

impl fmt::Display for VarName {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for VarName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr {
            expecting: "a variable name",
            check: |s| {
                if BUILTIN_VARIABLES.contains(&s) {
                    return Err(format!("`{s}` is a built-in variable; choose another name"));
                }
                if is_identifier(s) {
                    Ok(())
                } else {
                    Err(format!(
                        "invalid variable name `{}`: use letters, digits and `_`, not starting with a digit",
                        s.escape_debug()
                    ))
                }
            },
        })
        .map(VarName)
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct EnvName(String);

impl fmt::Display for EnvName {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for EnvName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr {
            expecting: "an environment variable name",
            check: |s| {
                if is_identifier(s) {
                    Ok(())
                } else {
                    Err(format!(
                        "invalid environment variable name `{}`: use letters, digits and `_`, not starting with a digit",
                        s.escape_debug()
                    ))
                }
            },
        })
        .map(EnvName)
    }
}

/// `env_remove`: environment variable names, each once.
struct EnvNameList(Vec<String>);

impl<'de> Deserialize<'de> for EnvNameList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EnvNameList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of environment variable names")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<EnvNameList, A::Error> {
                let mut out: Vec<String> = Vec::new();
                while let Some(EnvName(name)) = seq.next_element()? {
                    if out.contains(&name) {
                        return Err(de::Error::custom(format!("`{name}` is listed twice")));
                    }
                    out.push(name);
                }
                Ok(EnvNameList(out))
            }
        }
        d.deserialize_seq(V)
    }
}

/// The file a `collect` command's output goes to, under the bundle's `env/`.
struct CollectName(String);

impl<'de> Deserialize<'de> for CollectName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr { expecting: "a file name", check: check_collect_name }).map(CollectName)
    }
}

fn check_collect_name(s: &str) -> std::result::Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.as_bytes()[0].is_ascii_alphanumeric()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !ok {
        return Err(format!(
            "invalid collect name `{}`: a file name of 1 to 64 letters, digits, `-`, `_` or `.`, starting with a letter or digit (the output goes to `env/NAME` in the bundle)",
            s.escape_debug()
        ));
    }
    if s == "doctor.txt" {
        return Err("`doctor.txt` is doctor's report in the bundle's `env/`: choose another name".to_string());
    }
    Ok(())
}

/// `collect:` entries, their names unique.
struct CollectList(Vec<RawCollect>);

impl<'de> Deserialize<'de> for CollectList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CollectList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of mappings with `name` and `command`")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<CollectList, A::Error> {
                let mut out: Vec<RawCollect> = Vec::new();
                while let Some(c) = seq.next_element::<RawCollect>()? {
                    if out.iter().any(|o| o.name.0 == c.name.0) {
                        return Err(de::Error::custom(format!(
                            "two `collect` entries are named `{}`: each writes `env/NAME`, so names must differ",
                            c.name.0
                        )));
                    }
                    out.push(c);
                }
                Ok(CollectList(out))
            }
        }
        d.deserialize_seq(V)
    }
}

/// A knob's name: what `ablate --knob NAME` and the ablation's table call it.
struct KnobName(String);

impl<'de> Deserialize<'de> for KnobName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_str(CheckedStr { expecting: "a knob name", check: check_knob_name }).map(KnobName)
    }
}

fn check_knob_name(s: &str) -> std::result::Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.as_bytes()[0].is_ascii_alphanumeric()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        return Ok(());
    }
    Err(format!(
        "invalid knob name `{}`: 1 to 64 letters, digits, `-`, `_` or `.`, starting with a letter or digit (`ablate --knob NAME` names it)",
        s.escape_debug()
    ))
}

/// `knobs:` entries, their names unique, each changing something, no variable both set and
/// removed by one knob.
struct KnobList(Vec<RawKnob>);

impl<'de> Deserialize<'de> for KnobList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KnobList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of mappings with `name`, `description` and the change (`env`, `env_remove`, `args_add`, `args_remove`)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<KnobList, A::Error> {
                let mut out: Vec<RawKnob> = Vec::new();
                while let Some(k) = seq.next_element::<RawKnob>()? {
                    let name = &k.name.0;
                    if out.iter().any(|o| o.name.0 == *name) {
                        return Err(de::Error::custom(format!(
                            "two knobs are named `{name}`: `ablate --knob NAME` names one, so names must differ"
                        )));
                    }
                    let env = k.env.as_ref().map(|m| m.0.len()).unwrap_or(0);
                    let removed = k.env_remove.as_ref().map(|l| l.0.clone()).unwrap_or_default();
                    let words = |w: &Option<Args>| w.as_ref().is_some_and(|a| !a.0.is_empty());
                    if env == 0 && removed.is_empty() && !words(&k.args_add) && !words(&k.args_remove) {
                        return Err(de::Error::custom(format!(
                            "the knob `{name}` changes nothing: give `env`, `env_remove`, `args_add` or `args_remove`"
                        )));
                    }
                    if let Some(both) = removed
                        .iter()
                        .find(|r| k.env.as_ref().is_some_and(|m| m.0.keys().any(|e| e.0 == **r)))
                    {
                        return Err(de::Error::custom(format!(
                            "the knob `{name}` both sets and removes `{both}`: a variable is either set or removed"
                        )));
                    }
                    out.push(k);
                }
                Ok(KnobList(out))
            }
        }
        d.deserialize_seq(V)
    }
}

/// A knob's words (`args_add`, `args_remove`): a list, or a string split into words.
struct Args(Words);

impl<'de> Deserialize<'de> for Args {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(WordsVisitor { command: false, mounts: false }).map(Args)
    }
}

/// A string checked inside the visitor, so that an error carries the scalar's position.
struct CheckedStr {
    expecting: &'static str,
    check: fn(&str) -> std::result::Result<(), String>,
}

impl<'de> Visitor<'de> for CheckedStr {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<String, E> {
        if v.contains('\0') {
            return Err(E::custom("a NUL character cannot be part of a command, a path or the environment"));
        }
        (self.check)(v).map_err(E::custom)?;
        Ok(v.to_string())
    }
}

/// YAML integers may arrive as `i64`: a negative one is refused as `expected` describes.
fn non_negative<E: de::Error>(v: i64, expected: &dyn de::Expected) -> std::result::Result<u64, E> {
    u64::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Signed(v), expected))
}

struct Version;

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Version;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "the format version, {VERSION}")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Version, E> {
                if v == VERSION {
                    Ok(Version)
                } else {
                    Err(E::custom(format!(
                        "unsupported recipe version {v}: this xtask reads `version: {VERSION}` (see docs/recipes.md)"
                    )))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Version, E> {
                let v = non_negative(v, &self)?;
                self.visit_u64(v)
            }
        }
        d.deserialize_u64(V)
    }
}

/// Seconds, 1 to [`MAX_TIMEOUT_SECS`].
struct Timeout(u64);

impl<'de> Deserialize<'de> for Timeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Timeout;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a whole number of seconds, 1 to {MAX_TIMEOUT_SECS} (or with a unit: `90s`, `2m`, `1h30m`)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Timeout, E> {
                match crate::model::duration::secs(v, 1) {
                    Some(secs) => self.visit_u64(secs),
                    None => Err(E::invalid_type(de::Unexpected::Str(v), &self)),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Timeout, E> {
                if (1..=MAX_TIMEOUT_SECS).contains(&v) {
                    Ok(Timeout(v))
                } else {
                    Err(E::invalid_value(de::Unexpected::Unsigned(v), &self))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Timeout, E> {
                let v = non_negative(v, &self)?;
                self.visit_u64(v)
            }
        }
        d.deserialize_any(V)
    }
}

/// A command: a non-empty list of words, or a non-blank string.
struct Command(Words);

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(WordsVisitor { command: true, mounts: false }).map(Command)
    }
}

/// Paths: a list, or a string split into words; may be empty.
struct Paths(Words);

impl<'de> Deserialize<'de> for Paths {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(WordsVisitor { command: false, mounts: false }).map(Paths)
    }
}

struct WordsVisitor {
    command: bool,
    /// `container.mounts`: no empty word.
    mounts: bool,
}

impl<'de> Visitor<'de> for WordsVisitor {
    type Value = Words;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.command {
            f.write_str("a command: a list of words, or a string split into words")
        } else {
            f.write_str("a list of paths, or a string of paths separated by spaces")
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Words, E> {
        let line = CheckedStr { expecting: "", check: |s| check_template(s, false) }.visit_str::<E>(v)?;
        let words = split_words(&line).map_err(|e| E::custom(format!("{e:#}")))?;
        if self.mounts && words.iter().any(String::is_empty) {
            return Err(E::custom(format!("`{line}`: {EMPTY_MOUNT}")));
        }
        if self.command && line.trim().is_empty() {
            return Err(E::custom("the command is empty: give the program and its arguments"));
        }
        Ok(Words::Line(line))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Words, A::Error> {
        let mut items = Vec::new();
        loop {
            let item = if self.mounts {
                seq.next_element::<MountPath>()?.map(|m| m.0)
            } else {
                seq.next_element::<Tpl>()?.map(|t| t.0)
            };
            let Some(item) = item else { break };
            items.push(item);
        }
        if self.command && items.is_empty() {
            return Err(de::Error::custom(
                "the command is an empty list: give the program and its arguments, e.g. [\"./app\", \"--size\", \"1024\"]",
            ));
        }
        Ok(Words::List(items))
    }
}

/// A mapping whose keys must be unique (a plain map would keep the last silently).
struct UniqueMap<K, V>(BTreeMap<K, V>);

impl<'de, K, V> Deserialize<'de> for UniqueMap<K, V>
where
    K: Deserialize<'de> + Ord + fmt::Display,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct M<K, V>(PhantomData<(K, V)>);
        impl<'de, K, V> Visitor<'de> for M<K, V>
        where
            K: Deserialize<'de> + Ord + fmt::Display,
            V: Deserialize<'de>,
        {
            type Value = UniqueMap<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(key) = map.next_key::<K>()? {
                    if out.contains_key(&key) {
                        return Err(de::Error::custom(format!("duplicate key `{key}`")));
                    }
                    let value = map.next_value::<V>()?;
                    out.insert(key, value);
                }
                Ok(UniqueMap(out))
            }
        }
        d.deserialize_map(M(PhantomData))
    }
}
