//! MIME types by file extension. Text types carry `charset=utf-8`; `compressible` says whether compressing at
//! load time is worth trying.

/// The Content-Type for a file name and whether the type compresses well.
pub fn for_name(name: &str) -> (&'static str, bool) {
    let ext = match name.rfind('.') {
        Some(i) if i + 1 < name.len() && !name[i + 1..].contains('/') => &name[i + 1..],
        _ => return ("application/octet-stream", false),
    };
    let mut lower = [0u8; 16];
    if ext.len() > lower.len() {
        return ("application/octet-stream", false);
    }
    for (d, s) in lower.iter_mut().zip(ext.bytes()) {
        *d = s.to_ascii_lowercase();
    }
    let ext = std::str::from_utf8(&lower[..ext.len()]).unwrap_or("");
    by_extension(ext)
}

fn by_extension(ext: &str) -> (&'static str, bool) {
    match ext {
        // Text
        "html" | "htm" => ("text/html; charset=utf-8", true),
        "css" => ("text/css; charset=utf-8", true),
        "js" | "mjs" | "cjs" => ("text/javascript; charset=utf-8", true),
        "txt" | "text" | "log" => ("text/plain; charset=utf-8", true),
        "csv" => ("text/csv; charset=utf-8", true),
        "md" | "markdown" => ("text/markdown; charset=utf-8", true),
        "xml" | "xsl" | "xsd" => ("text/xml; charset=utf-8", true),
        "ics" => ("text/calendar; charset=utf-8", true),
        "vtt" => ("text/vtt; charset=utf-8", true),
        "yaml" | "yml" => ("text/yaml; charset=utf-8", true),
        "json" | "map" => ("application/json; charset=utf-8", true),
        "jsonld" => ("application/ld+json; charset=utf-8", true),
        "webmanifest" => ("application/manifest+json; charset=utf-8", true),
        "rss" => ("application/rss+xml; charset=utf-8", true),
        "atom" => ("application/atom+xml; charset=utf-8", true),
        "xhtml" => ("application/xhtml+xml; charset=utf-8", true),
        "svg" | "svgz" => ("image/svg+xml; charset=utf-8", ext == "svg"),
        "wasm" => ("application/wasm", true),
        "toml" => ("application/toml; charset=utf-8", true),
        // Images
        "png" => ("image/png", false),
        "jpg" | "jpeg" | "jfif" => ("image/jpeg", false),
        "gif" => ("image/gif", false),
        "webp" => ("image/webp", false),
        "avif" => ("image/avif", false),
        "ico" => ("image/x-icon", true),
        "bmp" => ("image/bmp", true),
        "tif" | "tiff" => ("image/tiff", false),
        "apng" => ("image/apng", false),
        // Fonts
        "woff" => ("font/woff", false),
        "woff2" => ("font/woff2", false),
        "ttf" => ("font/ttf", true),
        "otf" => ("font/otf", true),
        "eot" => ("application/vnd.ms-fontobject", true),
        // Audio / video
        "mp3" => ("audio/mpeg", false),
        "ogg" | "oga" => ("audio/ogg", false),
        "wav" => ("audio/wav", false),
        "flac" => ("audio/flac", false),
        "m4a" => ("audio/mp4", false),
        "mp4" | "m4v" => ("video/mp4", false),
        "webm" => ("video/webm", false),
        "ogv" => ("video/ogg", false),
        "mov" => ("video/quicktime", false),
        // Documents and archives
        "pdf" => ("application/pdf", false),
        "zip" => ("application/zip", false),
        "gz" => ("application/gzip", false),
        "br" => ("application/x-brotli", false),
        "tar" => ("application/x-tar", true),
        "7z" => ("application/x-7z-compressed", false),
        "bz2" => ("application/x-bzip2", false),
        "xz" => ("application/x-xz", false),
        "zst" => ("application/zstd", false),
        "epub" => ("application/epub+zip", false),
        "rtf" => ("application/rtf", true),
        "doc" => ("application/msword", true),
        "docx" => ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", false),
        "xls" => ("application/vnd.ms-excel", true),
        "xlsx" => ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", false),
        "ppt" => ("application/vnd.ms-powerpoint", true),
        "pptx" => ("application/vnd.openxmlformats-officedocument.presentationml.presentation", false),
        "wasm.map" => ("application/json; charset=utf-8", true),
        "pem" | "crt" => ("application/x-pem-file", true),
        "bin" | "exe" | "dll" | "so" | "dmg" | "iso" | "img" => ("application/octet-stream", false),
        _ => ("application/octet-stream", false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_types_carry_charset() {
        assert_eq!(for_name("index.html").0, "text/html; charset=utf-8");
        assert_eq!(for_name("a/b/site.CSS").0, "text/css; charset=utf-8");
        assert_eq!(for_name("app.js").0, "text/javascript; charset=utf-8");
        assert_eq!(for_name("data.json").0, "application/json; charset=utf-8");
    }

    #[test]
    fn binary_types_are_not_compressible() {
        assert_eq!(for_name("logo.png"), ("image/png", false));
        assert_eq!(for_name("f.woff2"), ("font/woff2", false));
        assert!(for_name("x.svg").1);
    }

    #[test]
    fn unknown_or_missing_extension_is_octet_stream() {
        assert_eq!(for_name("README").0, "application/octet-stream");
        assert_eq!(for_name("x.unknownext").0, "application/octet-stream");
        assert_eq!(for_name("trailingdot.").0, "application/octet-stream");
        assert_eq!(for_name("x.averyveryverylongextension").0, "application/octet-stream");
    }
}
