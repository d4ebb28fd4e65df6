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

/// (fields, head_200, fields_304) for one variant of `len` bytes.
pub fn build(i: &Inputs, len: u64) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let lm = dates::format_string(i.last_modified);
    let mut validators = String::new();
    validators
        .push_str(&format!("ETag: {}\r\nLast-Modified: {}\r\nCache-Control: {}\r\n", i.etag, lm, i.cache_control));
    if i.negotiable {
        validators.push_str("Vary: Accept-Encoding\r\n");
    }
    let mut extra = String::new();
    for (n, v) in i.extra {
        extra.push_str(&format!("{n}: {v}\r\n"));
    }
    let mut fields = format!("Content-Type: {}\r\n", i.mime);
    if i.encoding != Encoding::Identity {
        fields.push_str(&format!("Content-Encoding: {}\r\n", i.encoding.token()));
    }
    fields.push_str(&validators);
    fields.push_str("Accept-Ranges: bytes\r\n");
    fields.push_str(&extra);
    let head_200 = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n{fields}");
    let fields_304 = format!("{validators}{extra}");
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
