//! RFC 9218 priorities: the `priority` request header and PRIORITY_UPDATE frames carry a Structured Field
//! dictionary whose `u` (urgency 0..=7, lower first, default 3) and `i` (incremental, default false) order the
//! responses that compete for one connection. RFC 7540 PRIORITY frames and HEADERS priority are parsed only
//! for their errors and otherwise ignored (RFC 9113 §5.3.2 deprecates them).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    pub urgency: u8,
    pub incremental: bool,
}

impl Default for Priority {
    fn default() -> Priority {
        Priority { urgency: 3, incremental: false }
    }
}

impl Priority {
    /// Applies a dictionary such as `u=1, i` on top of `self`. Members that do not parse are ignored, as
    /// RFC 9218 §4 asks (a wrong type or an out-of-range urgency keeps the current value).
    pub fn parse(mut self, v: &[u8]) -> Priority {
        for member in v.split(|&b| b == b',') {
            let member = member.trim_ascii();
            // Parameters after ';' are ignored.
            let member = member.split(|&b| b == b';').next().unwrap_or(b"").trim_ascii();
            let (key, val) = match member.iter().position(|&b| b == b'=') {
                Some(p) => (&member[..p], Some(&member[p + 1..])),
                None => (member, None),
            };
            match (key, val) {
                (b"u", Some([d])) if (b'0'..=b'7').contains(d) => self.urgency = d - b'0',
                (b"i", None) | (b"i", Some(b"?1")) => self.incremental = true,
                (b"i", Some(b"?0")) => self.incremental = false,
                _ => {}
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc9218_examples() {
        let d = Priority::default();
        assert_eq!(d.parse(b"u=5"), Priority { urgency: 5, incremental: false });
        assert_eq!(d.parse(b"u=0, i"), Priority { urgency: 0, incremental: true });
        assert_eq!(d.parse(b"i=?1;x=1,u=2"), Priority { urgency: 2, incremental: true });
        assert_eq!(d.parse(b"u=9, i=?0, foo=bar"), d, "out of range and unknown members are ignored");
        assert_eq!(d.parse(b"u=1.5"), d);
        assert_eq!(
            Priority { urgency: 1, incremental: true }.parse(b"i=?0"),
            Priority { urgency: 1, incremental: false }
        );
    }
}
