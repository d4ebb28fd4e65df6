//! Precomputed response header blocks per file variant, so a response is a copy of a ready-made block plus
//! the cached Date line.

use crate::compress::encoding::Encoding;
use crate::dates;

pub struct Inputs<'a> {
    pub mime: &'a str,
    pub etag: &'a str,
    pub last_modified: i64,
    pub cache_control: &'a str,
    /// The file has more than one encoding: every response for it carries `Vary: Accept-Encoding`.
    pub negotiable: bool,
    pub encoding: Encoding,
    pub extra: &'a [(String, String)],
}

/// (fields, head_200, fields_304) for one variant of `len` bytes. Pushed into strings sized once, not formatted
/// piece by piece: a pool's first load of a site builds these for every file of its tree while a request waits.
pub fn build(i: &Inputs, len: u64) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    use std::fmt::Write as _;
    let lm = dates::format_string(i.last_modified);
    let cat = |parts: &[&str]| {
        let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum::<usize>());
        parts.iter().for_each(|p| s.push_str(p));
        s
    };
    let vary = if i.negotiable { "Vary: Accept-Encoding\r\n" } else { "" };
    let validators =
        cat(&["ETag: ", i.etag, "\r\nLast-Modified: ", &lm, "\r\nCache-Control: ", i.cache_control, "\r\n", vary]);
    let mut extra = String::with_capacity(i.extra.iter().map(|(n, v)| n.len() + v.len() + 4).sum());
    for (n, v) in i.extra {
        extra.extend([n.as_str(), ": ", v.as_str(), "\r\n"]);
    }
    let encoding = if i.encoding != Encoding::Identity {
        cat(&["Content-Encoding: ", i.encoding.token(), "\r\n"])
    } else {
        String::new()
    };
    let fields = cat(&["Content-Type: ", i.mime, "\r\n", &encoding, &validators, "Accept-Ranges: bytes\r\n", &extra]);
    let mut head_200 = String::with_capacity(fields.len() + 64);
    head_200.push_str("HTTP/1.1 200 OK\r\nContent-Length: ");
    let _ = write!(head_200, "{len}");
    head_200.push_str("\r\n");
    head_200.push_str(&fields);
    let fields_304 = cat(&[&validators, &extra]);
    (fields.into_bytes(), head_200.into_bytes(), fields_304.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_carry_every_representation_header() {
        let extra = vec![("X-Frame-Options".to_string(), "DENY".to_string())];
        let i = Inputs {
            mime: "text/html; charset=utf-8",
            etag: "\"abc-br\"",
            last_modified: 784111777,
            cache_control: "no-cache",
            negotiable: true,
            encoding: Encoding::Br,
            extra: &extra,
        };
        let (fields, head, f304) = build(&i, 42);
        let head = String::from_utf8(head).unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\nContent-Length: 42\r\nContent-Type: text/html; charset=utf-8\r\n"));
        for h in [
            "Content-Encoding: br\r\n",
            "ETag: \"abc-br\"\r\n",
            "Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\n",
            "Cache-Control: no-cache\r\n",
            "Vary: Accept-Encoding\r\n",
            "Accept-Ranges: bytes\r\n",
            "X-Frame-Options: DENY\r\n",
        ] {
            assert!(head.contains(h), "{h}");
        }
        let f304 = String::from_utf8(f304).unwrap();
        assert!(
            f304.contains("ETag: \"abc-br\"")
                && f304.contains("Vary: Accept-Encoding")
                && !f304.contains("Content-Type")
        );
        assert!(!String::from_utf8(fields).unwrap().contains("Content-Length"));
    }
}
