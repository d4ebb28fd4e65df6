//! The `Date:` header line, formatted at most once per second per worker.

use crate::dates;

pub struct DateCache {
    secs: i64,
    line: [u8; 6 + dates::LEN + 2],
}

use crate::sys::clock::realtime_coarse_secs as realtime_secs;

impl Default for DateCache {
    fn default() -> Self {
        Self::new()
    }
}

impl DateCache {
    pub fn new() -> DateCache {
        let mut d = DateCache { secs: i64::MIN, line: [0; 6 + dates::LEN + 2] };
        d.line[..6].copy_from_slice(b"Date: ");
        d.line[6 + dates::LEN..].copy_from_slice(b"\r\n");
        d.refresh();
        d
    }

    /// Reformats when the second changed. Cheap: one vDSO clock read.
    #[inline]
    pub fn refresh(&mut self) {
        let s = realtime_secs();
        if s != self.secs {
            self.secs = s;
            let mut b = [0u8; dates::LEN];
            dates::format(s, &mut b);
            self.line[6..6 + dates::LEN].copy_from_slice(&b);
        }
    }

    /// The second the line names (Unix seconds): the worker's cached clock.
    #[inline]
    pub fn secs(&self) -> i64 {
        self.secs
    }

    #[inline]
    pub fn line(&self) -> &[u8] {
        &self.line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_is_a_valid_header() {
        let d = DateCache::new();
        let s = std::str::from_utf8(d.line()).unwrap();
        assert!(s.starts_with("Date: ") && s.ends_with(" GMT\r\n"), "{s}");
        let parsed = dates::parse(&s.as_bytes()[6..s.len() - 2]).unwrap();
        assert!((parsed - realtime_secs()).abs() <= 2);
    }
}
