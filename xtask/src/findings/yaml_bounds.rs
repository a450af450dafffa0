//! Bounds on YAML from outside (a recipe file, a received bundle's `manifest.yaml`), checked on
//! the text before any YAML parser sees it: its size, how deep it nests, how many anchors
//! (`&a`) and aliases (`*a`) it has, and how much the aliases would expand it. A file of a
//! few hundred KB whose aliases refer to nodes full of aliases (the "billion laughs") expands
//! to gigabytes inside the parser; [`check`] refuses it in one pass over the text instead.
//!
//! It lives in `findings` because the two loaders, `recipe/parse.rs` and `bundle/writer.rs`,
//! sit on one level and do not import each other; this is the pure layer below both.
//!
//! Must not: parse YAML into values, allocate in proportion to what the aliases would expand
//! to, read files or print. It errs on the side of counting too much: where it cannot tell
//! where an anchored node ends it takes the larger guess, so a real file can only be refused
//! for a size far beyond the limits below.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// What a file may hold. [`Limits::RECIPE`] and [`Limits::MANIFEST`] are far above anything
/// the project's recipes or the manifests it writes come near (docs/security.md, `## Limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The size of the file, in bytes.
    pub max_bytes: usize,
    /// Nesting: block indentation levels, `- ` items opened on one line, and `[`/`{`, together.
    pub max_depth: usize,
    /// Anchors (`&name`).
    pub max_anchors: usize,
    /// Aliases (`*name`).
    pub max_aliases: usize,
    /// Bytes that all the aliases together may add: each alias counts the text of the node it
    /// names, with the expansions of the aliases inside that node.
    pub max_alias_bytes: u64,
}

impl Limits {
    /// A recipe: 1 MiB (the recipe loader's own cap), depth 64, 1,000 anchors, 10,000 aliases
    /// adding at most 1 MiB. The built-in recipes are under 10 KB, nest 6 deep and use none.
    pub const RECIPE: Limits = Limits {
        max_bytes: 1 << 20,
        max_depth: 64,
        max_anchors: 1_000,
        max_aliases: 10_000,
        max_alias_bytes: 1 << 20,
    };
    /// A bundle's `manifest.yaml`: 16 MiB, depth 64, 1,000 anchors, 10,000 aliases adding at
    /// most 1 MiB. The manifests `debug-ima` writes are about 10 KB, nest under 10 deep and
    /// have no anchor or alias at all (the YAML writer never makes one).
    pub const MANIFEST: Limits = Limits { max_bytes: 16 << 20, ..Limits::RECIPE };
}

/// Which limit a text is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Size,
    Depth,
    Anchors,
    Aliases,
    Expansion,
}

/// Why a text was refused, and where (1-based line and column, in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub bound: Bound,
    pub line: usize,
    pub column: usize,
    pub what: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.what)
    }
}

/// Where something is: byte offset, line, and the offset where its line starts (the column
/// is counted, in characters, only for a refusal).
#[derive(Debug, Clone, Copy)]
struct At {
    offset: usize,
    line: usize,
    line_start: usize,
}

impl At {
    fn column(&self, text: &str) -> usize {
        text.get(self.line_start..self.offset).map_or(1, |t| t.chars().count() + 1)
    }
}

/// How the node an anchor names ends, as far as the scan can tell.
#[derive(Debug, Clone, Copy)]
enum Ends {
    /// When the flow nesting falls below this depth, or a `,` at this depth: a node inside
    /// `[...]`/`{...}`, or one that starts with a bracket.
    Flow { depth: usize, bracket: bool },
    /// At the first later line (outside quotes, block scalars and brackets) indented less
    /// than `min`; one indented exactly `min - 1` still belongs to it when it starts with `- `
    /// and `dash` is set (`key: &a` over a sequence at the key's own indentation).
    Block { min: usize, dash: bool },
}

#[derive(Debug)]
struct Anchor {
    name: String,
    at: At,
    /// Byte offset where its node ends (found later; the end of the text until then).
    end: Option<usize>,
}

#[derive(Debug)]
struct Alias {
    name: String,
    at: At,
}

/// Checks `text` against `limits` before it is parsed. `Err` says what is over which limit and
/// where; the caller names the file and says what to do.
pub fn check(text: &str, limits: &Limits) -> Result<(), Refusal> {
    if text.len() > limits.max_bytes {
        return Err(Refusal {
            bound: Bound::Size,
            line: 1,
            column: 1,
            what: format!(
                "larger than {} (the limit is {})",
                size(text.len() as u64),
                size(limits.max_bytes as u64)
            ),
        });
    }
    let scan = Scan::run(text, limits)?;
    expansion(&scan, text, limits)
}

fn size(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
    } else {
        format!("{} KiB", b.div_ceil(1024))
    }
}

/// The anchors and aliases of a text, found in one pass that also checks the depth.
#[derive(Default)]
struct Scan {
    anchors: Vec<Anchor>,
    aliases: Vec<Alias>,
}

/// The scanner's state between characters and lines.
struct State<'a> {
    limits: &'a Limits,
    /// Open flow collections (`[`, `{`).
    flow: usize,
    /// Inside a quoted scalar: its quote.
    quote: Option<char>,
    /// Inside a block scalar (`|`, `>`): lines indented more than this belong to it.
    block_scalar: Option<usize>,
    /// The indentations of the open block levels.
    indents: Vec<usize>,
    /// Block anchors whose end is not known yet (indices into `Scan::anchors`), by the
    /// least indentation a line needs to stay inside: (plain, `dash` ones; see [`Ends::Block`]).
    /// Each anchor is closed once, so the scan stays linear however many are open.
    block_open: BTreeMap<usize, (Vec<usize>, Vec<usize>)>,
    /// Flow anchors whose end is not known yet, by depth: (those that end at a `,` at that
    /// depth or when it closes, those that are a bracket and end when it closes).
    flow_open: Vec<(Vec<usize>, Vec<usize>)>,
}

impl Scan {
    fn run(text: &str, limits: &Limits) -> Result<Scan, Refusal> {
        let mut scan = Scan::default();
        let mut st = State {
            limits,
            flow: 0,
            quote: None,
            block_scalar: None,
            indents: Vec::new(),
            block_open: BTreeMap::new(),
            flow_open: Vec::new(),
        };
        let mut offset = 0usize;
        for (lineno, raw) in text.split_inclusive('\n').enumerate() {
            let line = raw.strip_suffix('\n').unwrap_or(raw);
            let line = line.strip_suffix('\r').unwrap_or(line);
            scan.line(&mut st, line, offset, lineno + 1)?;
            offset += raw.len();
        }
        // Anchors still open end with the text (`end` stays `None`).
        Ok(scan)
    }

    fn too_deep(st: &State, depth: usize, line: usize, column: usize, brackets: bool) -> Result<(), Refusal> {
        if depth > st.limits.max_depth {
            let what = if brackets { "brackets nested" } else { "nested" };
            return Err(Refusal {
                bound: Bound::Depth,
                line,
                column,
                what: format!("{what} deeper than {} levels", st.limits.max_depth),
            });
        }
        Ok(())
    }

    /// Closes the anchors whose node ended before this structural line: those that need more
    /// indentation than it has, except `dash` ones one column in when it starts with `- `.
    fn close_block(&mut self, st: &mut State, indent: usize, starts_dash: bool, offset: usize) {
        let closed = st.block_open.split_off(&(indent + 1));
        for (min, (plain, dash)) in closed {
            for i in plain {
                self.anchors[i].end = Some(offset);
            }
            if min == indent + 1 && starts_dash {
                if !dash.is_empty() {
                    st.block_open.insert(min, (Vec::new(), dash));
                }
            } else {
                for i in dash {
                    self.anchors[i].end = Some(offset);
                }
            }
        }
    }

    /// Closes flow anchors at a `,` (the scalar ones at this depth) or a closing bracket (all
    /// of those deeper than the depth after it).
    fn close_flow(&mut self, st: &mut State, depth_after: usize, comma: bool, offset: usize) {
        if comma {
            if let Some((scalars, _)) = st.flow_open.get_mut(depth_after) {
                for i in scalars.drain(..) {
                    self.anchors[i].end = Some(offset);
                }
            }
            return;
        }
        while st.flow_open.len() > depth_after + 1 {
            let (scalars, brackets) = st.flow_open.pop().unwrap_or_default();
            for i in scalars.into_iter().chain(brackets) {
                self.anchors[i].end = Some(offset);
            }
        }
    }

    fn line(&mut self, st: &mut State, line: &str, offset: usize, lineno: usize) -> Result<(), Refusal> {
        let indent = line.bytes().take_while(|&b| b == b' ').count();
        let content = &line[indent..];
        let blank = content.trim_start_matches([' ', '\t']).is_empty();
        if let Some(parent) = st.block_scalar {
            if blank || indent > parent {
                return Ok(());
            }
            st.block_scalar = None;
        }
        let structural = st.quote.is_none() && st.flow == 0;
        if structural {
            if blank || content.starts_with('#') {
                return Ok(());
            }
            if line.starts_with('%') || line == "..." || line.starts_with("... ") {
                return Ok(());
            }
            let starts_dash = content == "-" || content.starts_with("- ");
            self.close_block(st, indent, starts_dash, offset);
            while st.indents.last().is_some_and(|&t| t > indent) {
                st.indents.pop();
            }
            if st.indents.last() != Some(&indent) {
                st.indents.push(indent);
            }
            Self::too_deep(st, st.indents.len() - 1, lineno, indent + 1, false)?;
        }
        self.chars(st, line, if structural { indent } else { 0 }, offset, lineno)
    }

    /// Scans the characters of one line from byte `from`.
    fn chars(
        &mut self,
        st: &mut State,
        line: &str,
        from: usize,
        offset: usize,
        lineno: usize,
    ) -> Result<(), Refusal> {
        let b = line.as_bytes();
        let mut i = from;
        // A node may start here: line start, after `- `, `? `, `: `, `[`, `{`, `,`, a property.
        let mut at_node = st.quote.is_none();
        // The column (bytes) where the last key or `- ` item on this line began, if any.
        let mut parent: Option<(usize, bool)> = None;
        let mut dashes = 0usize;
        if from == 0 && st.quote.is_none() && st.flow == 0 {
            // `--- ` starts a document; a node may follow on the same line.
            if line.starts_with("---") && matches!(b.get(3), None | Some(b' ' | b'\t')) {
                i = 3;
            }
        }
        let column = |i: usize| line[..i].chars().count() + 1;
        let is_space = |c: u8| c == b' ' || c == b'\t';
        let ends_token = |c: u8| is_space(c) || matches!(c, b',' | b'[' | b']' | b'{' | b'}');
        while i < b.len() {
            let c = b[i];
            if let Some(q) = st.quote {
                if q == '"' && c == b'\\' {
                    i += 2;
                    continue;
                }
                if c == q as u8 {
                    if q == '\'' && b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    st.quote = None;
                    at_node = false;
                }
                i += 1;
                continue;
            }
            if is_space(c) {
                i += 1;
                continue;
            }
            if c == b'#' && (i == 0 || is_space(b[i - 1])) {
                return Ok(());
            }
            let next = b.get(i + 1).copied();
            let indicator_gap = next.is_none_or(|n| is_space(n) || (st.flow > 0 && ends_token(n)));
            match c {
                b'[' | b'{' => {
                    st.flow += 1;
                    Self::too_deep(st, Self::depth(st, dashes), lineno, column(i), true)?;
                    at_node = true;
                    i += 1;
                }
                b']' | b'}' => {
                    st.flow = st.flow.saturating_sub(1);
                    self.close_flow(st, st.flow, false, offset + i + 1);
                    at_node = false;
                    i += 1;
                }
                b',' if st.flow > 0 => {
                    self.close_flow(st, st.flow, true, offset + i);
                    at_node = true;
                    i += 1;
                }
                b'-' | b'?' if at_node && indicator_gap => {
                    if c == b'-' {
                        dashes += 1;
                        Self::too_deep(st, Self::depth(st, dashes), lineno, column(i), false)?;
                        parent = Some((i, false));
                    }
                    i += 1;
                }
                b':' if indicator_gap => {
                    at_node = true;
                    i += 1;
                }
                b'&' | b'*' if at_node => {
                    let start = i;
                    i += 1;
                    // libyaml's anchor names: ASCII letters, digits, `_` and `-`.
                    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'-') {
                        i += 1;
                    }
                    let name = line[start + 1..i].to_string();
                    let at = At { offset: offset + start, line: lineno, line_start: offset };
                    if c == b'*' {
                        self.alias(st, name, at, column(start))?;
                        at_node = false;
                    } else {
                        let rest = line[i..].trim_start_matches([' ', '\t']);
                        let nothing_after = rest.is_empty() || rest.starts_with('#');
                        self.anchor(st, name, at, start, parent, nothing_after, rest, column(start))?;
                    }
                }
                b'!' if at_node => {
                    while i < b.len() && !ends_token(b[i]) {
                        i += 1;
                    }
                }
                b'"' | b'\'' if at_node => {
                    parent = Some((i, true));
                    st.quote = Some(c as char);
                    i += 1;
                }
                b'|' | b'>' if at_node && st.flow == 0 => {
                    // A block scalar: its lines are those indented more than its parent.
                    let p = parent.map_or(line.len() - line.trim_start_matches(' ').len(), |(col, _)| col);
                    st.block_scalar = Some(p);
                    return Ok(());
                }
                _ if at_node => {
                    // A plain scalar: to `: ` or ` #` (and, in brackets, to `,[]{}`).
                    parent = Some((i, true));
                    while i < b.len() {
                        let d = b[i];
                        let gap = b
                            .get(i + 1)
                            .copied()
                            .is_none_or(|n| is_space(n) || (st.flow > 0 && ends_token(n)));
                        if (d == b':' && gap)
                            || (d == b'#' && is_space(b[i - 1]))
                            || (st.flow > 0 && matches!(d, b',' | b'[' | b']' | b'{' | b'}'))
                        {
                            break;
                        }
                        i += 1;
                    }
                    at_node = false;
                }
                _ => i += 1,
            }
        }
        Ok(())
    }

    /// The nesting at a point of the current line: block levels below the top one, `- `
    /// items opened on the line, open brackets.
    fn depth(st: &State, dashes: usize) -> usize {
        st.indents.len().saturating_sub(1) + dashes + st.flow
    }

    #[allow(clippy::too_many_arguments)]
    fn anchor(
        &mut self,
        st: &mut State,
        name: String,
        at: At,
        byte_col: usize,
        parent: Option<(usize, bool)>,
        nothing_after: bool,
        rest: &str,
        column: usize,
    ) -> Result<(), Refusal> {
        if self.anchors.len() >= st.limits.max_anchors {
            return Err(Refusal {
                bound: Bound::Anchors,
                line: at.line,
                column,
                what: format!("more than {} anchors (`&name`)", st.limits.max_anchors),
            });
        }
        let bracket = rest.starts_with(['[', '{']);
        let ends = if st.flow > 0 || bracket {
            // Inside brackets: to the next `,` at its depth or its brackets' end; a node that is
            // a bracket: to that bracket's end (the depth inside it).
            Ends::Flow { depth: if bracket { st.flow + 1 } else { st.flow }, bracket }
        } else {
            match (parent, nothing_after) {
                // `key: &a value`, `- &a value`: this line, and lines indented past the key.
                (Some((col, _)), false) => Ends::Block { min: col + 1, dash: false },
                // `&a value` first on its line.
                (None, false) => Ends::Block { min: byte_col + 1, dash: false },
                // `key: &a` over the lines below; a sequence may stand at the key's indentation.
                (Some((col, key)), true) => Ends::Block { min: col + 1, dash: key },
                // `&a` alone: the node below, at this indentation or more.
                (None, true) => Ends::Block { min: byte_col, dash: false },
            }
        };
        let i = self.anchors.len();
        match ends {
            Ends::Flow { depth, bracket } => {
                if st.flow_open.len() <= depth {
                    st.flow_open.resize_with(depth + 1, Default::default);
                }
                let (scalars, brackets) = &mut st.flow_open[depth];
                if bracket { brackets } else { scalars }.push(i);
            }
            Ends::Block { min, dash } => {
                let (plain, dashed) = st.block_open.entry(min).or_default();
                if dash { dashed } else { plain }.push(i);
            }
        }
        self.anchors.push(Anchor { name, at, end: None });
        Ok(())
    }

    fn alias(&mut self, st: &mut State, name: String, at: At, column: usize) -> Result<(), Refusal> {
        if self.aliases.len() >= st.limits.max_aliases {
            return Err(Refusal {
                bound: Bound::Aliases,
                line: at.line,
                column,
                what: format!("more than {} aliases (`*name`)", st.limits.max_aliases),
            });
        }
        self.aliases.push(Alias { name, at });
        Ok(())
    }
}

/// Adds up what every alias expands to and refuses the text once that passes the limit.
/// Linear in the anchors and aliases: each anchor's expansion is computed once, from prefix
/// sums over the aliases (an alias inside an anchored node is expanded with it).
fn expansion(scan: &Scan, text: &str, limits: &Limits) -> Result<(), Refusal> {
    let len = text.len();
    let aliases = &scan.aliases;
    let mut anchors: Vec<(usize, usize, Option<u64>)> =
        scan.anchors.iter().map(|a| (a.at.offset, a.end.unwrap_or(len), None)).collect();
    // The latest anchor of each name so far, as the aliases are met in order.
    let mut latest: HashMap<&str, usize> = HashMap::new();
    let mut next_anchor = 0usize;
    // prefix[j]: the expansions of aliases 0..j.
    let mut prefix: Vec<u64> = Vec::with_capacity(aliases.len() + 1);
    prefix.push(0);
    // The index of the first alias at or after a byte offset.
    let first_alias_from = |off: usize| aliases.partition_point(|x| x.at.offset < off);
    for (j, alias) in aliases.iter().enumerate() {
        while next_anchor < scan.anchors.len() && scan.anchors[next_anchor].at.offset < alias.at.offset {
            latest.insert(&scan.anchors[next_anchor].name, next_anchor);
            next_anchor += 1;
        }
        let w = match latest.get(alias.name.as_str()) {
            // An alias of no anchor: the parser refuses it.
            None => 0,
            Some(&k) => {
                let (start, end, cached) = anchors[k];
                match cached {
                    Some(w) => w,
                    None if end <= alias.at.offset => {
                        let inner =
                            prefix[first_alias_from(end)].saturating_sub(prefix[first_alias_from(start)]);
                        let w = ((end - start) as u64).saturating_add(inner);
                        anchors[k].2 = Some(w);
                        w
                    }
                    // The alias stands inside the node it names (a loop, which the parser
                    // refuses, or a node whose end the scan overestimated): up to the alias.
                    None => {
                        let inner = prefix[j].saturating_sub(prefix[first_alias_from(start)]);
                        ((alias.at.offset - start) as u64).saturating_add(inner)
                    }
                }
            }
        };
        let total = prefix[j].saturating_add(w);
        if total > limits.max_alias_bytes {
            return Err(Refusal {
                bound: Bound::Expansion,
                line: alias.at.line,
                column: alias.at.column(text),
                what: format!(
                    "its aliases expand it by more than {} (at `*{}`): an alias bomb, or far more \
                     repetition than a file of this kind needs",
                    size(limits.max_alias_bytes),
                    alias.name
                ),
            });
        }
        prefix.push(total);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> bool {
        check(text, &Limits::RECIPE).is_ok()
    }

    /// The billion laughs: `levels` levels of `fan` aliases each, under 1 KiB per level.
    fn laughs(levels: usize, fan: usize) -> String {
        let mut s = format!("a0: &a0 [{}]\n", vec!["\"lol\""; fan].join(", "));
        for l in 1..levels {
            let refs = vec![format!("*a{}", l - 1); fan].join(", ");
            s.push_str(&format!("a{l}: &a{l} [{refs}]\n"));
        }
        s
    }

    #[test]
    fn real_shapes_pass() {
        assert!(ok("version: 1\nname: x\nrun:\n  argv: [a, b]\n"));
        // Merge keys and a few aliases, as people write them.
        let merge = "defaults: &d\n  timeout: 10\n  env: {A: 1}\njobs:\n  a:\n    <<: *d\n    x: 1\n  b:\n    <<: *d\n";
        assert!(ok(merge));
        // `&`, `*` and brackets inside scalars, quotes, comments and block scalars are text.
        assert!(ok("cmd: make && ./run *.cu\nq: \"&a *b [[[[\"\ns: '*x'' [['\n# *a [[[[\nd: |\n  *a &b [[[[\n  - *c\n"));
        assert!(ok(&"k: [[[[1]]]]\n".repeat(1000)));
    }

    #[test]
    fn the_billion_laughs_is_refused() {
        let bomb = laughs(10, 10);
        assert!(bomb.len() < 1024);
        let r = check(&bomb, &Limits::RECIPE).unwrap_err();
        assert!(r.what.contains("aliases expand it by more than 1.0 MiB"), "{r}");
        assert!(r.line >= 5 && r.line <= 8, "{r}");
        // Nine levels of nine: about 400 MB expanded, refused as well.
        assert!(check(&laughs(9, 9), &Limits::RECIPE).is_err());
        // A little repetition passes.
        assert!(ok(&laughs(3, 5)));
    }

    #[test]
    fn bombs_in_block_style_are_refused() {
        let mut s = String::from("l0: &l0\n  - lol\n  - lol\n  - lol\n  - lol\n  - lol\n  - lol\n");
        for l in 1..12 {
            s.push_str(&format!("l{l}: &l{l}\n"));
            for _ in 0..6 {
                s.push_str(&format!("  - *l{}\n", l - 1));
            }
        }
        let r = check(&s, &Limits::RECIPE).unwrap_err();
        assert!(r.what.contains("aliases expand"), "{r}");
        // A sequence at the key's own indentation belongs to the anchored key.
        let mut s = String::from("l0: &l0\n- lol lol lol lol lol lol lol lol\n- lol\n");
        for l in 1..14 {
            s.push_str(&format!("l{l}: &l{l}\n"));
            for _ in 0..5 {
                s.push_str(&format!("- *l{}\n", l - 1));
            }
        }
        assert!(check(&s, &Limits::RECIPE).is_err());
    }

    #[test]
    fn counts_and_depth_are_limited() {
        let many: String = (0..1001).map(|i| format!("k{i}: &a{i} x\n")).collect();
        assert!(check(&many, &Limits::RECIPE).unwrap_err().what.contains("more than 1000 anchors"));
        let aliases = format!("a: &a x\nb: [{}]\n", vec!["*a"; 10_001].join(","));
        assert!(check(&aliases, &Limits::RECIPE).unwrap_err().what.contains("more than 10000 aliases"));
        let deep = format!("a: {}{}\n", "[".repeat(65), "]".repeat(65));
        let r = check(&deep, &Limits::RECIPE).unwrap_err();
        assert!(r.what.contains("nested deeper than 64"), "{r}");
        assert_eq!((r.line, r.column), (1, 68));
        let block: String = (0..70).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect();
        assert!(check(&block, &Limits::RECIPE).unwrap_err().what.contains("nested deeper"));
        let dashes = format!("{}x\n", "- ".repeat(70));
        assert!(check(&dashes, &Limits::RECIPE).unwrap_err().what.contains("nested deeper"));
        let big = "#".repeat((1 << 20) + 1);
        assert!(check(&big, &Limits::RECIPE).unwrap_err().what.contains("larger than 1.0 MiB"));
        assert!(check(&big, &Limits::MANIFEST).is_ok());
    }

    #[test]
    fn self_references_and_unknown_names_end() {
        assert!(ok("a: &a [*a, *a]\n"));
        assert!(ok("a: *nothing\n"));
        assert!(ok("&a key: v\nother: *a\n"));
        assert!(ok("- &a x\n- *a\n- [&b y, *b]\n"));
    }

    /// A YAML document with anchors and aliases in block and flow style, from a seed, and
    /// the number of nodes it holds as written (an alias counting one).
    struct Gen {
        seed: u64,
        out: String,
        nodes: u64,
        /// Anchors whose node is complete (an alias may name them).
        done: Vec<String>,
        next: usize,
    }

    impl Gen {
        fn roll(&mut self, n: u64) -> u64 {
            self.seed ^= self.seed << 13;
            self.seed ^= self.seed >> 7;
            self.seed ^= self.seed << 17;
            self.seed % n
        }

        fn anchor(&mut self) -> Option<String> {
            (self.roll(3) == 0).then(|| {
                self.next += 1;
                format!("a{}", self.next)
            })
        }

        /// A node in flow style.
        fn flow(&mut self, depth: u32) {
            self.nodes += 1;
            let anchor = self.anchor();
            if let Some(a) = &anchor {
                self.out.push_str(&format!("&{a} "));
            }
            match self.roll(if depth > 3 { 2 } else { 4 }) {
                0 if !self.done.is_empty() && anchor.is_none() => {
                    let k = self.roll(self.done.len() as u64) as usize;
                    let alias = format!("*{}", self.done[k]);
                    self.out.push_str(&alias);
                }
                0 | 1 => {
                    let n = self.roll(100);
                    self.out.push_str(&format!("s{n}"));
                }
                2 => {
                    self.out.push('[');
                    for i in 0..self.roll(4) {
                        if i > 0 {
                            self.out.push_str(", ");
                        }
                        self.flow(depth + 1);
                    }
                    self.out.push(']');
                }
                _ => {
                    self.out.push('{');
                    for i in 0..self.roll(4) {
                        if i > 0 {
                            self.out.push_str(", ");
                        }
                        self.nodes += 1;
                        self.out.push_str(&format!("k{i}: "));
                        self.flow(depth + 1);
                    }
                    self.out.push('}');
                }
            }
            if let Some(a) = anchor {
                self.done.push(a);
            }
        }

        /// A block mapping at `indent`.
        fn map(&mut self, indent: usize, depth: u32) {
            let pad = " ".repeat(indent);
            for i in 0..1 + self.roll(4) {
                self.nodes += 1;
                self.out.push_str(&format!("{pad}k{i}:"));
                self.value(indent, depth, true);
            }
        }

        /// A block sequence at `indent`.
        fn seq(&mut self, indent: usize, depth: u32) {
            let pad = " ".repeat(indent);
            for _ in 0..1 + self.roll(4) {
                self.out.push_str(&format!("{pad}-"));
                self.value(indent, depth, false);
            }
        }

        /// The value after `key:` or `-`, inline or as a block below.
        fn value(&mut self, indent: usize, depth: u32, in_map: bool) {
            if depth > 3 || self.roll(2) == 0 {
                self.out.push(' ');
                self.flow(depth + 1);
                self.out.push('\n');
                return;
            }
            self.nodes += 1;
            let anchor = self.anchor();
            if let Some(a) = &anchor {
                self.out.push_str(&format!(" &{a}"));
            }
            self.out.push('\n');
            if self.roll(2) == 0 {
                self.map(indent + 2, depth + 1);
            } else {
                // A sequence under a key may stand at the key's own indentation.
                let at = if in_map && self.roll(2) == 0 { indent } else { indent + 2 };
                self.seq(at, depth + 1);
            }
            if let Some(a) = anchor {
                self.done.push(a);
            }
        }
    }

    fn generated(seed: u64) -> (String, u64) {
        let mut g = Gen { seed: seed | 1, out: String::new(), nodes: 1, done: Vec::new(), next: 0 };
        g.map(0, 0);
        (g.out, g.nodes)
    }

    fn count(v: &serde_yaml::Value) -> u64 {
        use serde_yaml::Value;
        1 + match v {
            Value::Sequence(s) => s.iter().map(count).sum(),
            Value::Mapping(m) => m.iter().map(|(k, v)| count(k) + count(v)).sum(),
            Value::Tagged(t) => count(&t.value),
            _ => 0,
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// The scan never counts less than the aliases really add: a document whose aliases add
        /// N nodes (each at least a byte of the node named) is refused with a limit below N.
        #[test]
        fn the_expansion_is_never_underestimated(seed in proptest::prelude::any::<u64>()) {
            let (text, written) = generated(seed);
            let v: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| {
                proptest::test_runner::TestCaseError::fail(format!("{e}\n{text}"))
            })?;
            let added = count(&v).saturating_sub(written);
            proptest::prop_assert!(check(&text, &Limits::RECIPE).is_ok(), "{text}");
            if added > 0 {
                let tight = Limits { max_alias_bytes: added - 1, ..Limits::RECIPE };
                proptest::prop_assert!(check(&text, &tight).is_err(), "{added} added by\n{text}");
            }
        }
    }
}
