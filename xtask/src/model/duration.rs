//! Durations as people write them (`90s`, `2m`, `1h30m`, `7d`): one reader for the recipe's
//! time limits and `bundle prune --older-than`.
//!
//! Must not: read, print or decide anything; the caller says what a bare number means.

/// Whole seconds of `text`: numbers each followed by `s`, `m`, `h` or `d` (`1h30m`), or one
/// bare number counted in `bare` seconds (1 for a time limit, 86,400 for an age); `None` for
/// anything else or an overflow.
pub fn secs(text: &str, bare: u64) -> Option<u64> {
    let t = text.trim();
    if let Ok(n) = t.parse::<u64>() {
        return n.checked_mul(bare);
    }
    let (mut total, mut num, mut any) = (0u64, None::<u64>, false);
    for c in t.chars() {
        if let Some(d) = c.to_digit(10) {
            num = Some(num.unwrap_or(0).checked_mul(10)?.checked_add(u64::from(d))?);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return None,
        };
        total = total.checked_add(num.take()?.checked_mul(unit)?)?;
        any = true;
    }
    (any && num.is_none()).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::secs;

    #[test]
    fn units_compound_forms_and_the_bare_unit() {
        assert_eq!(secs("90", 1), Some(90));
        assert_eq!(secs("7", 86_400), Some(604_800));
        assert_eq!(secs("2m", 1), Some(120));
        assert_eq!(secs("1h30m", 1), Some(5400));
        assert_eq!(secs(" 7d ", 1), Some(604_800));
        for bad in ["", "m", "1h30", "2x", "-5m", "1.5h", "99999999999999999999d"] {
            assert_eq!(secs(bad, 1), None, "{bad}");
        }
    }
}
