//! Content-coding negotiation by Accept-Encoding q-values (RFC 9110 §12.5.3). The client's preference decides:
//! the highest q wins and q=0 excludes a coding. Among codings of equal q the order is fixed, br, then zstd, then
//! gzip, then identity: the order of their usual sizes for the same file (brotli at quality 11 beats zstd at level
//! 19, which beats gzip -9), and a fixed order keeps the choice a function of the header alone.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Identity = 0,
    Br = 1,
    Gzip = 2,
    Zstd = 3,
}

/// How many encodings a file can have (the length of `FileEntry::variants`).
pub const COUNT: usize = 4;

/// Every encoding, identity first, in index order.
pub const ALL: [Encoding; COUNT] = [Encoding::Identity, Encoding::Br, Encoding::Gzip, Encoding::Zstd];

/// The compressed encodings in the order that breaks ties between equal q-values.
const PREFERENCE: [Encoding; 3] = [Encoding::Br, Encoding::Zstd, Encoding::Gzip];

impl Encoding {
    pub fn token(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Br => "br",
            Encoding::Gzip => "gzip",
            Encoding::Zstd => "zstd",
        }
    }

    /// The extension of a precompressed sibling file (`x.css.zst`) and of a `--compress-cache` entry.
    pub fn ext(self) -> &'static str {
        match self {
            Encoding::Identity => "",
            Encoding::Br => "br",
            Encoding::Gzip => "gz",
            Encoding::Zstd => "zst",
        }
    }

    /// The suffix of the variant's entity-tag (`"<tag>-br"`).
    pub fn etag_suffix(self) -> &'static str {
        match self {
            Encoding::Identity => "",
            Encoding::Br => "-br",
            Encoding::Gzip => "-gz",
            Encoding::Zstd => "-zst",
        }
    }
}

/// The compressed encodings (identity excluded), in index order.
pub const COMPRESSED: [Encoding; 3] = [Encoding::Br, Encoding::Gzip, Encoding::Zstd];

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

/// Picks the variant to send. `has[e as usize]` says whether a variant exists; identity always does.
pub fn negotiate(accept: Option<&[u8]>, has: [bool; COUNT]) -> Encoding {
    let accept = match accept {
        Some(a) if has[1..].iter().any(|&h| h) => a,
        _ => return Encoding::Identity,
    };
    // The q named for each encoding (by index), and for `*`.
    let mut named: [Option<u16>; COUNT] = [None; COUNT];
    let mut q_star: Option<u16> = None;
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
            &mut named[Encoding::Br as usize]
        } else if coding.eq_ignore_ascii_case(b"zstd") {
            &mut named[Encoding::Zstd as usize]
        } else if coding.eq_ignore_ascii_case(b"gzip") || coding.eq_ignore_ascii_case(b"x-gzip") {
            &mut named[Encoding::Gzip as usize]
        } else if coding.eq_ignore_ascii_case(b"identity") {
            &mut named[Encoding::Identity as usize]
        } else if coding == b"*" {
            &mut q_star
        } else {
            continue;
        };
        *slot = Some(slot.map_or(q, |old: u16| old.max(q)));
    }
    // Identity not named in the header ranks below any accepted coding; it is never refused outright (it is
    // the fallback when everything else has q=0).
    let mut best = Encoding::Identity;
    let mut best_q = named[0].or(q_star).unwrap_or(1).max(1);
    for e in PREFERENCE.iter().rev() {
        let q = if has[*e as usize] { named[*e as usize].or(q_star).unwrap_or(0) } else { 0 };
        // `>=` walking the preference backwards: on a tie the earlier (preferred) coding wins.
        if q > 0 && q >= best_q {
            best = *e;
            best_q = q;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use Encoding::*;

    const BR_GZ: [bool; COUNT] = [true, true, true, false];
    const ALL3: [bool; COUNT] = [true; COUNT];

    fn n(a: &str) -> Encoding {
        negotiate(Some(a.as_bytes()), BR_GZ)
    }

    fn z(a: &str) -> Encoding {
        negotiate(Some(a.as_bytes()), ALL3)
    }

    #[test]
    fn prefers_br_then_gzip() {
        assert_eq!(n("gzip, deflate, br"), Br);
        assert_eq!(n("gzip"), Gzip);
        assert_eq!(n("deflate"), Identity);
        assert_eq!(n(""), Identity);
        assert_eq!(negotiate(None, ALL3), Identity);
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
        let gz_only = [true, false, true, false];
        assert_eq!(negotiate(Some(b"br"), gz_only), Identity);
        assert_eq!(negotiate(Some(b"br, gzip"), gz_only), Gzip);
        assert_eq!(negotiate(Some(b"br, gzip"), [true, false, false, false]), Identity);
        assert_eq!(negotiate(Some(b"zstd, gzip"), BR_GZ), Gzip);
        assert_eq!(negotiate(Some(b"zstd"), [true, false, false, true]), Zstd);
    }

    #[test]
    fn zstd_by_q_and_by_the_fixed_order_on_ties() {
        assert_eq!(z("gzip, deflate, br, zstd"), Br);
        assert_eq!(z("zstd, gzip"), Zstd);
        assert_eq!(z("gzip, zstd"), Zstd, "equal q: zstd before gzip whatever the header's order");
        assert_eq!(z("br;q=0.9, zstd"), Zstd);
        assert_eq!(z("br, zstd;q=0"), Br);
        assert_eq!(z("br;q=0, zstd;q=0, gzip;q=0.1"), Gzip);
        assert_eq!(z("ZSTD;q=0.5, gzip;q=0.4"), Zstd);
        assert_eq!(z("*;q=0.5, br;q=0.4"), Zstd, "* gives zstd 0.5, above br's 0.4");
        assert_eq!(z("zstd;q=0.5, identity"), Identity);
        assert_eq!(z("*;q=0"), Identity);
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
