//! Content-coding negotiation by Accept-Encoding q-values (RFC 9110 §12.5.3). q=0 excludes a coding;
//! on equal q the smaller variant wins (br, then gzip, then identity).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Identity = 0,
    Br = 1,
    Gzip = 2,
}

impl Encoding {
    pub fn token(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Br => "br",
            Encoding::Gzip => "gzip",
        }
    }
}

/// q-value in thousandths; None when malformed.
fn qvalue(v: &[u8]) -> Option<u16> {
    let v = v.trim_ascii();
    match v {
        [b'0'] | [b'0', b'.'] => Some(0),
        [b'1'] | [b'1', b'.'] => Some(1000),
        [b'1', b'.', rest @ ..] if rest.len() <= 3 && rest.iter().all(|&b| b == b'0') => Some(1000),
        [b'0', b'.', rest @ ..] if !rest.is_empty() && rest.len() <= 3 && rest.iter().all(u8::is_ascii_digit) => {
            let mut q = 0u16;
            for i in 0..3 {
                q = q * 10 + rest.get(i).map_or(0, |&d| (d - b'0') as u16);
            }
            Some(q)
        }
        _ => None,
    }
}

/// Picks the variant to send. `available[e as usize]` says whether a variant exists; identity always does.
pub fn negotiate(accept: Option<&[u8]>, has_br: bool, has_gzip: bool) -> Encoding {
    let accept = match accept {
        Some(a) if has_br || has_gzip => a,
        _ => return Encoding::Identity,
    };
    let (mut q_br, mut q_gz, mut q_id, mut q_star): (Option<u16>, Option<u16>, Option<u16>, Option<u16>) =
        (None, None, None, None);
    for item in accept.split(|&b| b == b',') {
        let mut parts = item.split(|&b| b == b';');
        let coding = parts.next().unwrap_or(b"").trim_ascii();
        if coding.is_empty() {
            continue;
        }
        let mut q = 1000;
        for p in parts {
            let p = p.trim_ascii();
            if p.len() >= 2 && (p[0] == b'q' || p[0] == b'Q') && p[1] == b'=' {
                q = qvalue(&p[2..]).unwrap_or(0);
            }
        }
        let slot = if coding.eq_ignore_ascii_case(b"br") {
            &mut q_br
        } else if coding.eq_ignore_ascii_case(b"gzip") || coding.eq_ignore_ascii_case(b"x-gzip") {
            &mut q_gz
        } else if coding.eq_ignore_ascii_case(b"identity") {
            &mut q_id
        } else if coding == b"*" {
            &mut q_star
        } else {
            continue;
        };
        *slot = Some(slot.map_or(q, |old: u16| old.max(q)));
    }
    let br = if has_br { q_br.or(q_star).unwrap_or(0) } else { 0 };
    let gz = if has_gzip { q_gz.or(q_star).unwrap_or(0) } else { 0 };
    // Identity not named in the header ranks below any accepted coding; it is never refused outright (it is
    // the fallback when everything else has q=0).
    let id = q_id.or(q_star).unwrap_or(1).max(1);
    if br > 0 && br >= gz && br >= id {
        Encoding::Br
    } else if gz > 0 && gz >= id {
        Encoding::Gzip
    } else {
        Encoding::Identity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Encoding::*;

    fn n(a: &str) -> Encoding {
        negotiate(Some(a.as_bytes()), true, true)
    }

    #[test]
    fn prefers_br_then_gzip() {
        assert_eq!(n("gzip, deflate, br"), Br);
        assert_eq!(n("gzip"), Gzip);
        assert_eq!(n("deflate"), Identity);
        assert_eq!(n(""), Identity);
        assert_eq!(negotiate(None, true, true), Identity);
    }

    #[test]
    fn q_values_rank_and_exclude() {
        assert_eq!(n("br;q=0.5, gzip;q=0.8"), Gzip);
        assert_eq!(n("br;q=0, gzip"), Gzip);
        assert_eq!(n("br;q=0, gzip;q=0"), Identity);
        assert_eq!(n("*"), Br);
        assert_eq!(n("*;q=0.1, br;q=0"), Gzip);
        assert_eq!(n("gzip;q=0.5, identity;q=1"), Identity);
        assert_eq!(n("BR;Q=1.000"), Br);
        assert_eq!(n("br;q=garbage, gzip"), Gzip);
        assert_eq!(n("br;q=0.001"), Br);
    }

    #[test]
    fn missing_variants_are_not_chosen() {
        assert_eq!(negotiate(Some(b"br"), false, true), Identity);
        assert_eq!(negotiate(Some(b"br, gzip"), false, true), Gzip);
        assert_eq!(negotiate(Some(b"br, gzip"), false, false), Identity);
    }

    #[test]
    fn qvalue_grammar() {
        assert_eq!(qvalue(b"0.5"), Some(500));
        assert_eq!(qvalue(b"0.123"), Some(123));
        assert_eq!(qvalue(b"1.0"), Some(1000));
        assert_eq!(qvalue(b"1.5"), None);
        assert_eq!(qvalue(b"0.1234"), None);
    }
}
