//! `DIR/deploys.json`, the contract between Git content's puller (internal/contentagent/deploysfile.go writes it,
//! with a rename, before each flip of `DIR/current`) and the server:
//!
//! ```json
//! {"deploys": [{"tree": "<name of DIR/tree>", "commit": "<hex>", "servedFrom": "<RFC 3339>", "servedUntil": "<RFC 3339>"}]}
//! ```
//!
//! One entry per tree the pod keeps; `servedUntil` absent while the deploy is served (or never was), `servedFrom`
//! absent when it never was. Unknown fields are ignored (the puller may say more); a malformed entry refuses the
//! whole file, naming it (`deploys[2].tree: ...`), and the site serves without skew protection until a good one
//! comes: a tree name or commit that is not plain hex could lead outside `DIR` or into a header.

use crate::dates::days_from_civil;
use serde_json::Value;

/// The largest file read: 20 entries of about 250 bytes each, with room to spare.
pub const MAX_BYTES: usize = 64 << 10;

/// The most entries taken (the puller keeps at most 20 trees: MaxHistory).
pub const MAX_ENTRIES: usize = 64;

/// One entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deploy {
    pub tree: String,
    pub commit: String,
    /// Unix seconds.
    pub served_from: Option<i64>,
    pub served_until: Option<i64>,
}

/// Parses the file's bytes.
pub fn parse(bytes: &[u8]) -> Result<Vec<Deploy>, String> {
    let root: Value = serde_json::from_slice(bytes).map_err(|e| format!("invalid JSON: {e}"))?;
    let list = root.get("deploys").ok_or("deploys: required")?;
    let list = list.as_array().ok_or("deploys: expected an array")?;
    if list.len() > MAX_ENTRIES {
        return Err(format!("deploys: {} entries, at most {MAX_ENTRIES}", list.len()));
    }
    list.iter().enumerate().map(|(i, d)| entry(d).map_err(|e| format!("deploys[{i}].{e}"))).collect()
}

fn entry(d: &Value) -> Result<Deploy, String> {
    let text = |key: &str| -> Result<Option<&str>, String> {
        d.get(key).map(|v| v.as_str().ok_or_else(|| format!("{key}: expected a string"))).transpose()
    };
    let hex = |key: &str, min: usize| -> Result<String, String> {
        let v = text(key)?.ok_or_else(|| format!("{key}: required"))?;
        let ok = (min..=64).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !ok {
            return Err(format!("{key}: {v:?} is not {min} to 64 lower-case hex digits"));
        }
        Ok(v.to_string())
    };
    let time = |key: &str| -> Result<Option<i64>, String> {
        text(key)?.map(|t| rfc3339(t).ok_or_else(|| format!("{key}: {t:?} is not an RFC 3339 time"))).transpose()
    };
    if !d.is_object() {
        return Err("expected an object".into());
    }
    Ok(Deploy {
        tree: hex("tree", 16)?,
        commit: hex("commit", 7)?,
        served_from: time("servedFrom")?,
        served_until: time("servedUntil")?,
    })
}

/// `2026-12-03T06:15:00.123Z` or `...+01:00` → Unix seconds (the fraction dropped), as Go's time.Time writes it.
pub fn rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        s.get(r).filter(|d| d.bytes().all(|c| c.is_ascii_digit()))?.parse().ok()
    };
    let (y, mo, d, h, mi, sec) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = s.get(19..)?;
    if let Some(f) = rest.strip_prefix('.') {
        let n = f.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        rest = &f[n..];
    }
    let offset = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let two =
                |t: Option<&str>| -> Option<i64> { t.filter(|t| t.bytes().all(|c| c.is_ascii_digit()))?.parse().ok() };
            let (oh, om) = (two(rest.get(1..3))?, two(rest.get(4..6))?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_go_writes_them() {
        assert_eq!(rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339("2026-12-03T06:15:00.123456789Z"), Some(1_796_278_500));
        assert_eq!(rfc3339("2026-12-03T07:15:00+01:00"), Some(1_796_278_500));
        assert_eq!(rfc3339("2000-02-29T12:00:00-00:30"), Some(951_825_600 + 1800));
        for bad in [
            "",
            "2026-12-03",
            "2026-12-03T06:15:00",
            "2026-13-03T06:15:00Z",
            "2026-12-03T06:15:00.Z",
            "x026-12-03T06:15:00Z",
        ] {
            assert_eq!(rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn entries_are_checked_and_named() {
        let c = "a".repeat(40);
        let ok = format!(
            r#"{{"deploys": [{{"tree": "{c}", "commit": "{c}", "servedUntil": "1970-01-01T00:01:00Z", "more": 1}},
            {{"tree": "{c}", "commit": "{c}"}}]}}"#
        );
        let d = parse(ok.as_bytes()).unwrap();
        assert_eq!((d.len(), d[0].served_until, d[1].served_until), (2, Some(60), None));
        let bad = |json: String, want: &str| {
            let e = parse(json.as_bytes()).unwrap_err();
            assert!(e.contains(want), "{e}");
        };
        bad(format!(r#"{{"deploys": [{{"tree": "../{c}", "commit": "{c}"}}]}}"#), "deploys[0].tree:");
        bad(format!(r#"{{"deploys": [{{"tree": "{c}", "commit": "{c}\r\nX: y"}}]}}"#), "deploys[0].commit:");
        bad(format!(r#"{{"deploys": [{{"tree": "{c}", "commit": "{c}", "servedUntil": "soon"}}]}}"#), "servedUntil");
        bad("{}".into(), "deploys: required");
        bad("[".into(), "invalid JSON");
    }
}
