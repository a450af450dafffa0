//! Every mistake of a recipe at once (issue 24), with "did you mean" for a misspelt name.
//! serde stops at the first error, so after one the top-level block that holds it is blanked
//! (its lines made empty, so the line numbers stay) and the text is read again, at most
//! [`MAX_RECIPE_ERRORS`] times; an error that the blanking itself causes is not reported.
//!
//! Must not: read YAML itself (the strict pass is given to it), read files or print.

use std::collections::BTreeSet;

use anyhow::{anyhow, Result};

use super::types::MAX_RECIPE_ERRORS;
use super::words::join_words;

/// One error of a strict pass: where it is (line and column, 1-based), when it says, and
/// its message without the file.
pub(super) struct PassError {
    pub(super) at: Option<(usize, usize)>,
    pub(super) msg: String,
}

/// A top-level block of the text: the line of its column-0 key, up to (not including) the
/// next one; 0-based lines.
struct Block {
    start: usize,
    end: usize,
    key: String,
}

/// Reads `text` with `pass` (given the text and whether `variables` is blanked in it) and,
/// after each error, again with the error's block blanked, until a pass succeeds, an error
/// has no block to blank, or [`MAX_RECIPE_ERRORS`] are found. `required` are the top-level
/// keys that must be there: one missing from `text` is reported, one missing only because
/// it was blanked is not. Several errors come as one, a line each ([`at_once`]).
pub(super) fn strict_passes<T>(
    label: &str,
    text: &str,
    required: &[&str],
    mut pass: impl FnMut(&str, bool) -> std::result::Result<T, PassError>,
) -> Result<T> {
    let blocks = blocks(text);
    let keys: BTreeSet<&str> = blocks.iter().map(|b| b.key.as_str()).collect();
    let mut blanked = vec![false; blocks.len()];
    let mut found: Vec<PassError> = Vec::new();
    let mut current = text.to_string();
    // Where serde said a top-level key is missing: the mapping was read to its end.
    let mut mapping_end: Option<PassError> = None;
    let mut stopped = false;
    loop {
        let variables_blanked = blocks.iter().zip(&blanked).any(|(b, x)| *x && b.key == "variables");
        if blanked.iter().any(|x| *x) && is_blank_yaml(&current) {
            // Every block had an error: what is left is the keys the text never had.
            mapping_end = Some(PassError { at: None, msg: String::new() });
            break;
        }
        let e = match pass(&current, variables_blanked) {
            Ok(value) if found.is_empty() => return Ok(value),
            Ok(_) => break,
            Err(e) => e,
        };
        if missing_top_level_key(&e.msg).is_some() {
            mapping_end = Some(e);
            break;
        }
        let Some(last) = e.at.and_then(|(line, _)| block_of(&blocks, line.saturating_sub(1))) else {
            found.push(e); // no place, or before the first key: nothing to blank
            break;
        };
        // A YAML syntax error says where the construct it was reading began (`while parsing a
        // flow sequence at line 5 column 12`): blank from there, not only where it was seen.
        let first = context_line(&e.msg).and_then(|l| block_of(&blocks, l - 1)).filter(|f| *f < last);
        let range = first.unwrap_or(last)..=last;
        if range.clone().all(|b| blanked[b]) {
            break; // no progress: an echo of an error already reported
        }
        found.push(e);
        for b in range {
            blanked[b] = true;
        }
        if found.len() >= MAX_RECIPE_ERRORS {
            stopped = true;
            break;
        }
        current = blank(text, &blocks, &blanked);
    }
    // serde reads in file order; an error without a place goes after those with one.
    found.sort_by_key(|e| e.at.map_or((usize::MAX, 0), |at| at));
    if let Some(end) = mapping_end {
        let missing = missing_keys(text, &blocks, &keys, required, &end);
        if found.is_empty() && missing.is_empty() && !end.msg.is_empty() {
            found.push(end); // serde's word against the text's: say what serde says
        } else {
            found.extend(missing);
        }
    }
    stopped |= found.len() > MAX_RECIPE_ERRORS;
    found.truncate(MAX_RECIPE_ERRORS);
    let errors = found.into_iter().map(|e| located(label, e)).collect();
    Err(at_once(label, errors, stopped).err().unwrap_or_else(|| anyhow!("{label}: not a recipe")))
}

/// The top-level keys missing from the text, after serde read the mapping to its end
/// (`end`: its error when it said one is missing). Those the text has are missing only
/// because they were blanked. In a block mapping all are reported where the mapping starts
/// (where serde says), in `required`'s order; otherwise only serde's one.
fn missing_keys(
    text: &str,
    blocks: &[Block],
    keys: &BTreeSet<&str>,
    required: &[&str],
    end: &PassError,
) -> Vec<PassError> {
    let serde_says = missing_top_level_key(&end.msg).map(str::to_string);
    if !starts_as_block_mapping(text) || blocks.is_empty() {
        return match serde_says {
            Some(k) if !keys.contains(k.as_str()) => vec![PassError { at: end.at, msg: end.msg.clone() }],
            _ => Vec::new(),
        };
    }
    let at = Some((blocks[0].start + 1, 1));
    let mut out: Vec<PassError> = required
        .iter()
        .filter(|k| !keys.contains(**k))
        .map(|k| PassError { at, msg: format!("missing field `{k}`") })
        .collect();
    if let Some(k) = serde_says.filter(|k| !keys.contains(k.as_str()) && !required.contains(&k.as_str())) {
        out.push(PassError { at, msg: format!("missing field `{k}`") });
    }
    out
}

/// `K` of serde's `missing field `K`` for a top-level key (a nested one has its path first:
/// `run: missing field `command``).
fn missing_top_level_key(msg: &str) -> Option<&str> {
    msg.strip_prefix("missing field `")?.strip_suffix('`')
}

/// The line libyaml's `..., while parsing X at line L column C` names, if the message has one.
fn context_line(msg: &str) -> Option<usize> {
    let (_, tail) = msg.rsplit_once(", while ")?;
    let (_, at) = tail.rsplit_once(" at line ")?;
    at.split(' ').next()?.parse().ok().filter(|l| *l >= 1)
}

/// The top-level blocks of `text`, in order.
fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<Block> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(key) = top_level_key(line) {
            if let Some(prev) = out.last_mut() {
                prev.end = i;
            }
            out.push(Block { start: i, end: lines.len(), key });
        }
    }
    out
}

/// The block holding 0-based `line` (the last one for a line past the end).
fn block_of(blocks: &[Block], line: usize) -> Option<usize> {
    blocks.iter().rposition(|b| b.start <= line)
}

/// The key of a line that starts a top-level key (`name: x`, `"name": x`, `run:`), `None`
/// for any other line: indented, blank, a comment, a list item, a document marker, a flow
/// bracket, or no `key:` at all.
fn top_level_key(line: &str) -> Option<String> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let first = line.chars().next()?;
    if first.is_whitespace()
        || matches!(first, '#' | '{' | '[' | '}' | ']' | ',' | '%' | '?' | '|' | '>')
        || line.starts_with("---")
        || line.starts_with("...")
        || line == "-"
        || line.starts_with("- ")
        || line.starts_with("-\t")
    {
        return None;
    }
    if first == '"' || first == '\'' {
        let close = line[1..].find(first)? + 1;
        let rest = line[close + 1..].trim_start();
        return rest.starts_with(':').then(|| line[1..close].to_string());
    }
    let colon = line
        .char_indices()
        .find(|&(i, c)| c == ':' && line[i + 1..].chars().next().is_none_or(char::is_whitespace))?;
    Some(line[..colon.0].trim_end().to_string())
}

/// Whether the first line with content starts a top-level key (the text is a block mapping).
fn starts_as_block_mapping(text: &str) -> bool {
    text.split('\n')
        .find(|l| {
            let t = l.trim();
            !(t.is_empty() || t.starts_with('#') || t.starts_with('%') || t == "---")
        })
        .is_some_and(|l| top_level_key(l).is_some())
}

/// Whether `text` holds nothing but comments, blank lines and document markers.
pub(super) fn is_blank_yaml(text: &str) -> bool {
    text.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#') || t == "---" || t == "..."
    })
}

/// `text` with the lines of the blanked blocks made empty; line breaks kept.
fn blank(text: &str, blocks: &[Block], blanked: &[bool]) -> String {
    let gone = |i: usize| blocks.iter().zip(blanked).any(|(b, x)| *x && (b.start..b.end).contains(&i));
    let mut out = String::with_capacity(text.len());
    for (i, piece) in text.split_inclusive('\n').enumerate() {
        if gone(i) {
            out.push_str(if piece.ends_with("\r\n") {
                "\r\n"
            } else if piece.ends_with('\n') {
                "\n"
            } else {
                ""
            });
        } else {
            out.push_str(piece);
        }
    }
    out
}

/// The error of one [`PassError`], as a single error reads: `FILE:LINE:COL: message`.
fn located(label: &str, e: PassError) -> anyhow::Error {
    match e.at {
        Some((line, col)) => anyhow!("{label}:{line}:{col}: {}", e.msg),
        None => anyhow!("{label}: {}", e.msg),
    }
}

/// `errors` as one: none is `Ok`, one is itself, several are a line each (in the order
/// given), then how many there are (`stopped`: the first [`MAX_RECIPE_ERRORS`] only) and what
/// to do.
pub(super) fn at_once(label: &str, errors: Vec<anyhow::Error>, stopped: bool) -> Result<()> {
    let mut errors = errors;
    if errors.len() <= 1 {
        return errors.pop().map_or(Ok(()), Err);
    }
    let n = errors.len();
    let mut lines: Vec<String> = errors.iter().map(|e| format!("{e:#}").replace('\n', "\\n")).collect();
    let stopped = if stopped { format!(" (the first {n}; there may be more)") } else { String::new() };
    lines.push(format!(
        "{n} errors in {label}{stopped}: fix them and run `cargo xtask recipe check {}` again",
        join_words(&[label])
    ));
    Err(anyhow!(lines.join("\n")))
}

// ---------------------------------------------------------------------------------------
// Did you mean
// ---------------------------------------------------------------------------------------

/// Levenshtein distance of two short names (a transposition counts 2), for "did you mean".
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The name of `names` nearest to `name`, within 2 edits and not `name` itself; of equally
/// near ones, the one closest in length (`rugns` is `rungs`, not `run`), then the first.
pub(super) fn nearest<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let len = name.chars().count();
    names
        .into_iter()
        .map(|n| (edit_distance(name, n), n.chars().count().abs_diff(len), n))
        .filter(|(d, _, _)| (1..=2).contains(d))
        .min_by_key(|(d, len_diff, _)| (*d, *len_diff))
        .map(|(_, _, n)| n)
}

/// serde's `unknown field `X`, expected one of `A`, `B`` (or `unknown variant`) with
/// ` (did you mean `A`?)` when one of the names expected is near `X`; any other message
/// unchanged.
pub(super) fn with_suggestion(msg: String) -> String {
    let Some((unknown, rest)) = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|p| msg.find(p).map(|i| &msg[i + p.len()..]))
        .and_then(|tail| tail.split_once('`'))
    else {
        return msg;
    };
    let Some(expected) = rest.strip_prefix(", expected ") else {
        return msg;
    };
    let names = expected.split('`').skip(1).step_by(2);
    match nearest(unknown, names) {
        Some(near) => format!("{msg} (did you mean `{near}`?)"),
        None => msg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_level_keys_are_column_0_keys() {
        assert_eq!(top_level_key("run:").as_deref(), Some("run"));
        assert_eq!(top_level_key("name: x: y").as_deref(), Some("name"));
        assert_eq!(top_level_key("\"run\" : {}").as_deref(), Some("run"));
        assert_eq!(top_level_key("url: http://x").as_deref(), Some("url"));
        for not in ["  run:", "# run:", "- run:", "---", "{run: x}", "colour red", "", "a:b"] {
            assert_eq!(top_level_key(not), None, "{not}");
        }
    }

    #[test]
    fn blanking_keeps_lines_and_other_blocks() {
        let text = "# c\na: 1\n  b\n\nc:\n- x\nd: 2";
        let bs = blocks(text);
        let keys: Vec<(&str, usize, usize)> = bs.iter().map(|b| (b.key.as_str(), b.start, b.end)).collect();
        assert_eq!(keys, [("a", 1, 4), ("c", 4, 6), ("d", 6, 7)]);
        assert_eq!(blank(text, &bs, &[false, true, false]), "# c\na: 1\n  b\n\n\n\nd: 2");
        assert_eq!(blank("a: 1\r\nb: 2\r\n", &blocks("a: 1\r\nb: 2\r\n"), &[true, false]), "\r\nb: 2\r\n");
        assert_eq!(block_of(&bs, 0), None);
        assert_eq!(block_of(&bs, 5), Some(1));
        assert_eq!(block_of(&bs, 99), Some(2));
    }

    #[test]
    fn context_lines_of_libyaml_messages() {
        let m = "did not find expected ',' or ']', while parsing a flow sequence at line 5 column 12";
        assert_eq!(context_line(m), Some(5));
        assert_eq!(context_line("unknown field `x`, expected `y`"), None);
    }

    #[test]
    fn suggestions_only_for_near_names() {
        let s = |m: &str| with_suggestion(m.to_string());
        assert_eq!(
            s("rungs: unknown field `memchek`, expected one of `baseline`, `memcheck`"),
            "rungs: unknown field `memchek`, expected one of `baseline`, `memcheck` (did you mean `memcheck`?)"
        );
        assert!(
            s("unknown field `rugns`, expected one of `run`, `rungs`").ends_with("(did you mean `rungs`?)")
        );
        assert!(s("x: unknown variant `g`, expected `lineinfo` or `G`").ends_with("(did you mean `G`?)"));
        for far in [
            "unknown field `colour`, expected one of `version`, `name`",
            "unknown field `a`, there are no fields",
            "missing field `run`",
        ] {
            assert_eq!(s(far), far);
        }
        assert_eq!(nearest("arch", ["arch", "ach"]), Some("ach"));
        assert_eq!(nearest("rugns", ["run", "rungs"]), Some("rungs"));
        assert_eq!(edit_distance("ab", "ba"), 2);
    }
}
