//! The cheap tests the line parsers put before their work: every line of a log reaches every
//! parser, and most lines are none of theirs. Trims that stop at once on a line with nothing
//! to trim (one that starts and ends with printable ASCII, as most do), and the same answers
//! as `str::trim` and `str::trim_end` on every other line; an indentation counted eight bytes
//! at a time.
//!
//! Must not: do I/O, allocate, or answer differently from the `str` method it stands for.

/// Whether a character that starts (or ends) with byte `b` cannot be whitespace: `b` is ASCII
/// above the space (`char::is_whitespace` is `\t`..`\r`, the space, and characters beyond
/// ASCII).
#[inline]
fn solid(b: u8) -> bool {
    b > b' ' && b < 0x80
}

/// `s.trim()`.
#[inline]
pub fn trim(s: &str) -> &str {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) if solid(f) && solid(l) => s,
        _ => s.trim(),
    }
}

/// `s.trim_end()`.
#[inline]
pub fn trim_end(s: &str) -> &str {
    match s.as_bytes().last() {
        Some(&l) if solid(l) => s,
        _ => s.trim_end(),
    }
}

/// How many spaces (` `, nothing else) `b` starts with, eight bytes at a time.
#[inline]
pub fn leading_spaces(b: &[u8]) -> usize {
    let mut n = 0;
    while let Some(word) = b.get(n..n + 8) {
        let other =
            u64::from_le_bytes(word.try_into().expect("eight bytes")) ^ u64::from_le_bytes(*b"        ");
        if other != 0 {
            return n + other.trailing_zeros() as usize / 8;
        }
        n += 8;
    }
    n + b[n..].iter().take_while(|&&c| c == b' ').count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counts_leading_spaces() {
        for s in [
            "",
            " ",
            "x",
            " x",
            "        ",
            "         x",
            "       \tx",
            &" ".repeat(40),
            &format!("{}y ", " ".repeat(17)),
        ] {
            assert_eq!(leading_spaces(s.as_bytes()), s.bytes().take_while(|&c| c == b' ').count(), "{s:?}");
        }
    }

    #[test]
    fn trims_as_str_does() {
        for s in ["", " ", "a", " a ", "a\t", "\u{a0}a\u{3000}", "a\u{85}", "\x1fa\x1f", "\u{b}a\u{c}", "é"]
        {
            assert_eq!(trim(s), s.trim(), "{s:?}");
            assert_eq!(trim_end(s), s.trim_end(), "{s:?}");
        }
    }

    proptest! {
        #[test]
        fn trims_any_text_as_str_does(s in "\\PC*|[ \\t\\r\\n\\x0b\\x0c\\u{85}\\u{a0}\\u{2000}a-z]*") {
            prop_assert_eq!(trim(&s), s.trim());
            prop_assert_eq!(trim_end(&s), s.trim_end());
            prop_assert_eq!(leading_spaces(s.as_bytes()), s.bytes().take_while(|&c| c == b' ').count());
        }
    }
}
