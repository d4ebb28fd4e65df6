//! Content-Type by file extension, from mime_guess's table (a maintained copy of the Apache/nginx/IANA mappings),
//! looked up once per file at load time. Text types carry `charset=utf-8`; `compressible` says whether
//! compressing at load time is worth trying.

use std::path::Path;

/// Where mime_guess lags the current registrations, for types sites serve every day.
const OVERRIDES: &[(&str, &str)] = &[
    // RFC 9239: JavaScript is text/javascript, whatever the module flavour.
    ("mjs", "text/javascript"),
    ("cjs", "text/javascript"),
    // Source maps are JSON (mime_guess says text/plain).
    ("map", "application/json"),
    // RFC 8081 font types.
    ("woff", "font/woff"),
    ("otf", "font/otf"),
];

/// Non-text types that still compress well (the text types are recognised by their shape, see `is_text`).
const COMPRESSIBLE: &[&str] = &[
    "application/wasm",
    "application/x-tar",
    "application/rtf",
    "application/msword",
    "application/vnd.ms-excel",
    "application/vnd.ms-powerpoint",
    "application/vnd.ms-fontobject",
    "application/x-x509-ca-cert",
    "font/ttf",
    "font/otf",
    "image/bmp",
    "image/x-icon",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentType {
    /// The Content-Type header value.
    pub value: String,
    pub compressible: bool,
}

/// Text in the sense of "has a charset": text/*, JSON, XML, JavaScript and their `+json`/`+xml` relatives.
fn is_text(essence: &str) -> bool {
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(essence, "application/json" | "application/javascript" | "application/xml")
}

/// The media type (without parameters) for a file extension, and whether it is text (then served with
/// `charset=utf-8`). Allocation-free: a previous deploy's file is typed per request (answer/stale.rs).
pub fn essence(ext: &str) -> (&'static str, bool) {
    let essence = OVERRIDES
        .iter()
        .find(|(e, _)| e.eq_ignore_ascii_case(ext))
        .map(|(_, t)| *t)
        .or_else(|| mime_guess::from_ext(ext).first_raw())
        .unwrap_or("application/octet-stream");
    (essence, is_text(essence))
}

/// The Content-Type for a file name (or URL path) and whether it compresses well.
pub fn for_name(name: &str) -> ContentType {
    let ext = Path::new(name).extension().and_then(|e| e.to_str()).unwrap_or("");
    let (essence, text) = essence(ext);
    // An .svgz is already gzip: compressing it again only costs load time.
    let already_compressed = ext.eq_ignore_ascii_case("svgz");
    if text {
        ContentType { value: format!("{essence}; charset=utf-8"), compressible: !already_compressed }
    } else {
        ContentType { value: essence.to_string(), compressible: COMPRESSIBLE.contains(&essence) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ct(name: &str) -> String {
        for_name(name).value
    }

    #[test]
    fn text_types_carry_charset() {
        assert_eq!(ct("index.html"), "text/html; charset=utf-8");
        assert_eq!(ct("a/b/site.CSS"), "text/css; charset=utf-8");
        assert_eq!(ct("app.js"), "text/javascript; charset=utf-8");
        assert_eq!(ct("mod.mjs"), "text/javascript; charset=utf-8");
        assert_eq!(ct("data.json"), "application/json; charset=utf-8");
        assert_eq!(ct("app.js.map"), "application/json; charset=utf-8");
        assert_eq!(ct("site.webmanifest"), "application/manifest+json; charset=utf-8");
        assert_eq!(ct("feed.rss"), "application/rss+xml; charset=utf-8");
        assert_eq!(ct("x.svg"), "image/svg+xml; charset=utf-8");
    }

    #[test]
    fn compressibility() {
        assert_eq!(for_name("logo.png"), ContentType { value: "image/png".into(), compressible: false });
        assert_eq!(for_name("f.woff2"), ContentType { value: "font/woff2".into(), compressible: false });
        assert_eq!(for_name("f.woff"), ContentType { value: "font/woff".into(), compressible: false });
        assert!(for_name("x.svg").compressible);
        assert!(!for_name("x.svgz").compressible);
        assert!(for_name("favicon.ico").compressible);
        assert!(for_name("m.wasm").compressible);
        assert!(for_name("f.otf").compressible);
        assert!(!for_name("a.zip").compressible);
    }

    #[test]
    fn unknown_or_missing_extension_is_octet_stream() {
        for name in ["README", "x.unknownext", "trailingdot.", "/.htaccess", "/dir.d/file"] {
            assert_eq!(
                for_name(name),
                ContentType { value: "application/octet-stream".into(), compressible: false },
                "{name}"
            );
        }
    }
}
