//! Request-target path safety: percent-decode exactly once, then normalise `.`/`..`/empty segments.
//! Anything that would climb above the root, a NUL, a backslash or invalid UTF-8 is rejected (400).
//! The output is written into a caller-provided buffer so the hot path never allocates.

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum PathError {
    /// Not starting with `/`, bad percent escape, NUL, backslash, invalid UTF-8, `..` above the root.
    Bad,
    /// Longer than the output buffer.
    TooLong,
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Normalises the path part of an origin-form target (no query) into `out`, returning the used length.
/// The result always starts with `/`; a trailing `/` on the input is kept (it names a directory).
pub fn normalize(raw: &[u8], out: &mut [u8]) -> Result<usize, PathError> {
    if raw.first() != Some(&b'/') {
        return Err(PathError::Bad);
    }
    // Pass 1: percent-decode once into `out`.
    let mut n = 0;
    let mut i = 0;
    while i < raw.len() {
        let mut b = raw[i];
        if b == b'%' {
            let (h, l) = match (raw.get(i + 1).and_then(|&c| hex(c)), raw.get(i + 2).and_then(|&c| hex(c))) {
                (Some(h), Some(l)) => (h, l),
                _ => return Err(PathError::Bad),
            };
            b = h << 4 | l;
            i += 3;
        } else {
            i += 1;
        }
        if b == 0 || b == b'\\' {
            return Err(PathError::Bad);
        }
        if n >= out.len() {
            return Err(PathError::TooLong);
        }
        out[n] = b;
        n += 1;
    }
    if std::str::from_utf8(&out[..n]).is_err() {
        return Err(PathError::Bad);
    }
    // Pass 2: normalise segments in place. `w` is the write cursor; it never overtakes the read cursor.
    let trailing = out[n - 1] == b'/';
    let mut w = 0; // output length; out[..w] is "/seg/seg" without trailing slash
    let mut r = 0;
    let mut last_dot = false;
    while r < n {
        // skip slashes
        while r < n && out[r] == b'/' {
            r += 1;
        }
        if r >= n {
            break;
        }
        let start = r;
        while r < n && out[r] != b'/' {
            r += 1;
        }
        let seg_len = r - start;
        last_dot = true;
        if seg_len == 1 && out[start] == b'.' {
            continue;
        }
        if seg_len == 2 && out[start] == b'.' && out[start + 1] == b'.' {
            if w == 0 {
                return Err(PathError::Bad);
            }
            // pop one segment
            while w > 0 && out[w - 1] != b'/' {
                w -= 1;
            }
            w -= 1; // the slash itself
            continue;
        }
        last_dot = false;
        out[w] = b'/';
        out.copy_within(start..r, w + 1);
        w += 1 + seg_len;
    }
    // "/a/." and "/a/b/.." name directories: they keep a trailing slash like "/a/".
    if w == 0 || trailing || last_dot {
        if w >= out.len() {
            return Err(PathError::TooLong);
        }
        out[w] = b'/';
        w += 1;
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> Result<String, PathError> {
        let mut buf = [0u8; 256];
        normalize(s.as_bytes(), &mut buf).map(|n| String::from_utf8(buf[..n].to_vec()).unwrap())
    }

    #[test]
    fn plain_paths_pass_through() {
        assert_eq!(norm("/").unwrap(), "/");
        assert_eq!(norm("/index.html").unwrap(), "/index.html");
        assert_eq!(norm("/a/b/").unwrap(), "/a/b/");
    }

    #[test]
    fn dots_and_empty_segments_are_normalised() {
        assert_eq!(norm("/a/./b").unwrap(), "/a/b");
        assert_eq!(norm("/a/../b").unwrap(), "/b");
        assert_eq!(norm("//a///b").unwrap(), "/a/b");
        assert_eq!(norm("/a/b/..").unwrap(), "/a/");
        assert_eq!(norm("/a/.").unwrap(), "/a/");
        assert_eq!(norm("/a/b/../../c").unwrap(), "/c");
        assert_eq!(norm("/..a/b..").unwrap(), "/..a/b..");
    }

    #[test]
    fn escapes_above_root_are_rejected() {
        assert_eq!(norm("/.."), Err(PathError::Bad));
        assert_eq!(norm("/../etc/passwd"), Err(PathError::Bad));
        assert_eq!(norm("/a/../../b"), Err(PathError::Bad));
        assert_eq!(norm("/%2e%2e/etc/passwd"), Err(PathError::Bad));
        assert_eq!(norm("/a/%2E%2E/%2e%2e/x"), Err(PathError::Bad));
        assert_eq!(norm("/..%2fetc"), Err(PathError::Bad));
    }

    #[test]
    fn decodes_exactly_once() {
        assert_eq!(norm("/a%20b").unwrap(), "/a b");
        // %252e decodes to the literal "%2e", never to "."
        assert_eq!(norm("/%252e%252e/x").unwrap(), "/%2e%2e/x");
        assert_eq!(norm("/caf%C3%A9").unwrap(), "/café");
    }

    #[test]
    fn bad_bytes_are_rejected() {
        assert_eq!(norm("/a%00b"), Err(PathError::Bad));
        assert_eq!(norm("/a\\b"), Err(PathError::Bad));
        assert_eq!(norm("/a%5cb"), Err(PathError::Bad));
        assert_eq!(norm("/%ff"), Err(PathError::Bad));
        assert_eq!(norm("/%zz"), Err(PathError::Bad));
        assert_eq!(norm("/%2"), Err(PathError::Bad));
        assert_eq!(norm("/%"), Err(PathError::Bad));
        assert_eq!(norm("a/b"), Err(PathError::Bad));
        assert_eq!(norm(""), Err(PathError::Bad));
    }

    #[test]
    fn output_buffer_bound_is_respected() {
        let mut buf = [0u8; 4];
        assert_eq!(normalize(b"/abcdef", &mut buf), Err(PathError::TooLong));
        assert_eq!(normalize(b"/abc", &mut buf), Ok(4));
        assert_eq!(normalize(b"/abc/", &mut buf), Err(PathError::TooLong));
    }
}
