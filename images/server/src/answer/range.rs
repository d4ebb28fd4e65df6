//! Range requests (RFC 9110 §14): one byte range is served as 206; several ranges or unparseable values
//! are ignored (the full 200 is a correct answer); a syntactically valid but unsatisfiable range is 416.

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum RangeResult {
    /// Serve the whole representation.
    Full,
    /// Serve bytes start..=end.
    Partial { start: u64, end: u64 },
    /// 416 with `Content-Range: bytes */len`.
    Unsatisfiable,
}

fn num(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 18 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0u64, |n, &c| n * 10 + (c - b'0') as u64))
}

/// Evaluates a Range header value against a representation of `len` bytes.
pub fn evaluate(value: &[u8], len: u64) -> RangeResult {
    let v = value.trim_ascii();
    if v.len() < 6 || !v[..6].eq_ignore_ascii_case(b"bytes=") {
        return RangeResult::Full; // other units are ignored
    }
    let spec = v[6..].trim_ascii();
    if spec.contains(&b',') {
        return RangeResult::Full; // multiple ranges: we answer with the whole representation
    }
    let dash = match spec.iter().position(|&b| b == b'-') {
        Some(d) => d,
        None => return RangeResult::Full,
    };
    let (first, last) = (spec[..dash].trim_ascii(), spec[dash + 1..].trim_ascii());
    if first.is_empty() {
        // suffix range: last N bytes
        let n = match num(last) {
            Some(n) => n,
            None => return RangeResult::Full,
        };
        if n == 0 || len == 0 {
            return RangeResult::Unsatisfiable;
        }
        return RangeResult::Partial { start: len.saturating_sub(n), end: len - 1 };
    }
    let start = match num(first) {
        Some(s) => s,
        None => return RangeResult::Full,
    };
    let end = if last.is_empty() {
        None
    } else {
        match num(last) {
            Some(e) if e >= start => Some(e),
            _ => return RangeResult::Full, // invalid: last < first
        }
    };
    if start >= len {
        return RangeResult::Unsatisfiable;
    }
    let end = end.map_or(len - 1, |e| e.min(len - 1));
    RangeResult::Partial { start, end }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RangeResult::*;

    #[test]
    fn single_ranges() {
        assert_eq!(evaluate(b"bytes=0-9", 100), Partial { start: 0, end: 9 });
        assert_eq!(evaluate(b"bytes=90-", 100), Partial { start: 90, end: 99 });
        assert_eq!(evaluate(b"bytes=-10", 100), Partial { start: 90, end: 99 });
        assert_eq!(evaluate(b"bytes=-1000", 100), Partial { start: 0, end: 99 });
        assert_eq!(evaluate(b"bytes=50-1000", 100), Partial { start: 50, end: 99 });
        assert_eq!(evaluate(b"Bytes=0-0", 1), Partial { start: 0, end: 0 });
    }

    #[test]
    fn unsatisfiable() {
        assert_eq!(evaluate(b"bytes=100-", 100), Unsatisfiable);
        assert_eq!(evaluate(b"bytes=100-200", 100), Unsatisfiable);
        assert_eq!(evaluate(b"bytes=-0", 100), Unsatisfiable);
        assert_eq!(evaluate(b"bytes=0-", 0), Unsatisfiable);
    }

    #[test]
    fn ignored() {
        assert_eq!(evaluate(b"items=0-9", 100), Full);
        assert_eq!(evaluate(b"bytes=0-1,5-6", 100), Full);
        assert_eq!(evaluate(b"bytes=9-1", 100), Full);
        assert_eq!(evaluate(b"bytes=a-b", 100), Full);
        assert_eq!(evaluate(b"bytes=5", 100), Full);
        assert_eq!(evaluate(b"bytes=-", 100), Full);
    }
}
