//! Text values every layer cuts the same way: at most so many bytes of a string, at a
//! character boundary (a message, a field, a name, a report kept bounded).
//!
//! Must not: allocate, or cut anywhere but at a character boundary.

/// At most `max` bytes of `s`, cut at a character boundary (never inside a multi-byte
/// character; `s` itself when it fits).
pub fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_a_character_boundary() {
        assert_eq!(cut("abc", 5), "abc");
        assert_eq!(cut("abc", 2), "ab");
        assert_eq!(cut("aé", 2), "a");
        assert_eq!(cut("€uro", 1), "");
        assert_eq!(cut("", 0), "");
        for s in ["ü€😀x", "日本語テキスト"] {
            for max in 0..=s.len() + 1 {
                let c = cut(s, max);
                assert!(c.len() <= max && s.starts_with(c), "{s} {max}");
                assert!(max >= s.len() || s[c.len()..].chars().next().unwrap().len_utf8() + c.len() > max);
            }
        }
    }
}
