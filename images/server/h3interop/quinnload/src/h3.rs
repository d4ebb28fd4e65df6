//! The least HTTP/3 a load client needs (RFC 9114, QPACK of RFC 9204 without a dynamic table): a control stream
//! opening, a GET's HEADERS frame, and a response's status and body length.

/// Control stream type (0x00), then a SETTINGS frame (0x04) with nothing in it.
pub const CONTROL_STREAM: [u8; 3] = [0x00, 0x04, 0x00];

/// A GET of `path` on `authority`: one HEADERS frame. Field lines: `:method GET` and `:scheme https` from the
/// static table (indices 17 and 23), `:authority` and `:path` as literals naming static entries 0 and 1.
pub fn request(authority: &str, path: &str) -> Vec<u8> {
    let mut fields = vec![0x00, 0x00, 0xc0 | 17, 0xc0 | 23];
    literal_with_static_name(&mut fields, 0, authority.as_bytes());
    literal_with_static_name(&mut fields, 1, path.as_bytes());
    let mut frame = Vec::with_capacity(fields.len() + 10);
    varint(&mut frame, 0x01);
    varint(&mut frame, fields.len() as u64);
    frame.extend_from_slice(&fields);
    frame
}

/// A whole response stream → (status, bytes of its DATA frames).
pub fn response(b: &[u8]) -> Result<(u16, u64), String> {
    let mut rest = b;
    let mut status = None;
    let mut body = 0u64;
    while !rest.is_empty() {
        let (kind, n) = read_varint(rest).ok_or("truncated frame type")?;
        rest = &rest[n..];
        let (len, n) = read_varint(rest).ok_or("truncated frame length")?;
        rest = &rest[n..];
        let len = usize::try_from(len).map_err(|_| "frame too long")?;
        if rest.len() < len {
            return Err(format!("frame of {len} bytes, {} left in the stream", rest.len()));
        }
        let (payload, after) = rest.split_at(len);
        match kind {
            0x01 if status.is_none() => status = Some(status_of(payload)?),
            0x00 => body += len as u64,
            _ => {}
        }
        rest = after;
    }
    Ok((status.ok_or("no HEADERS frame")?, body))
}

/// The status from the first field line of a field section (the server sends `:status` first).
fn status_of(section: &[u8]) -> Result<u16, String> {
    // Required Insert Count (8-bit prefix) and Base (7-bit prefix): both 0 without a dynamic table.
    let (ric, n) = prefix_int(section, 8).ok_or("truncated field section")?;
    let (_, m) = prefix_int(&section[n..], 7).ok_or("truncated field section")?;
    if ric != 0 {
        return Err("dynamic table reference in a response".into());
    }
    let line = &section[n + m..];
    let first = *line.first().ok_or("empty field section")?;
    if first & 0xc0 == 0xc0 {
        // Indexed field line, static table.
        let (i, _) = prefix_int(line, 6).ok_or("truncated index")?;
        return static_status(i).ok_or_else(|| format!("static entry {i} is not a :status"));
    }
    if first & 0xd0 == 0x50 {
        // Literal with a static name reference (never-indexed or not); the value is the status's digits.
        let (i, k) = prefix_int(line, 4).ok_or("truncated name index")?;
        if !(24..=28).contains(&i) && !(63..=71).contains(&i) {
            return Err(format!("first field (static name {i}) is not :status"));
        }
        let v = &line[k..];
        let huffman = v.first().is_some_and(|b| b & 0x80 != 0);
        let (len, j) = prefix_int(v, 7).ok_or("truncated status")?;
        let digits = v.get(j..j + len as usize).ok_or("truncated status")?;
        let class = if huffman { huffman_first_digit(digits) } else { digits.first().map(|d| d.wrapping_sub(b'0')) };
        return match class {
            Some(c @ 1..=5) => Ok(c as u16 * 100),
            _ => Err("unreadable :status".into()),
        };
    }
    Err(format!("first field line 0x{first:02x} is not :status"))
}

/// `:status` values of the QPACK static table.
fn static_status(i: u64) -> Option<u16> {
    const LOW: [u16; 5] = [103, 200, 304, 404, 503];
    const HIGH: [u16; 9] = [100, 204, 206, 302, 400, 403, 421, 425, 500];
    match i {
        24..=28 => Some(LOW[(i - 24) as usize]),
        63..=71 => Some(HIGH[(i - 63) as usize]),
        _ => None,
    }
}

/// The first digit of a Huffman-coded status (RFC 7541 codes: '1' 00001, '2' 00010, '3'..'5' 011001..011011).
fn huffman_first_digit(b: &[u8]) -> Option<u8> {
    let x = *b.first()?;
    match (x >> 3, x >> 2) {
        (1, _) => Some(1),
        (2, _) => Some(2),
        (_, 0x19) => Some(3),
        (_, 0x1a) => Some(4),
        (_, 0x1b) => Some(5),
        _ => None,
    }
}

fn literal_with_static_name(out: &mut Vec<u8>, index: u64, value: &[u8]) {
    write_prefix_int(out, 0x50, 4, index);
    write_prefix_int(out, 0x00, 7, value.len() as u64);
    out.extend_from_slice(value);
}

fn write_prefix_int(out: &mut Vec<u8>, high: u8, bits: u32, mut v: u64) {
    let max = (1u64 << bits) - 1;
    if v < max {
        out.push(high | v as u8);
        return;
    }
    out.push(high | max as u8);
    v -= max;
    while v >= 0x80 {
        out.push(0x80 | (v & 0x7f) as u8);
        v >>= 7;
    }
    out.push(v as u8);
}

fn prefix_int(b: &[u8], bits: u32) -> Option<(u64, usize)> {
    let max = (1u64 << bits) - 1;
    let mut v = (*b.first()? as u64) & max;
    if v < max {
        return Some((v, 1));
    }
    let mut shift = 0;
    for (i, &x) in b.iter().enumerate().skip(1) {
        v += ((x & 0x7f) as u64) << shift;
        if x & 0x80 == 0 {
            return Some((v, i + 1));
        }
        shift += 7;
        if shift > 56 {
            return None;
        }
    }
    None
}

fn varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=63 => out.push(v as u8),
        64..=16383 => out.extend_from_slice(&(0x4000 | v as u16).to_be_bytes()),
        16384..=1_073_741_823 => out.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes()),
        _ => out.extend_from_slice(&(0xc000_0000_0000_0000 | v).to_be_bytes()),
    }
}

fn read_varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let mut v = (first & 0x3f) as u64;
    for &x in &bytes[1..] {
        v = (v << 8) | x as u64;
    }
    Some((v, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back() {
        let f = request("127.0.0.1:8443", "/a/long/path/of/more/than/one/hundred/and/twenty/seven/bytes/so/that/the/length/takes/two/bytes/xxxxxxxxxxxxxxxxxxxx");
        let (kind, n) = read_varint(&f).unwrap();
        assert_eq!(kind, 1);
        let (len, m) = read_varint(&f[n..]).unwrap();
        assert_eq!(len as usize, f.len() - n - m);
    }

    #[test]
    fn statuses() {
        // HEADERS with :status 200 indexed, then DATA of 3 bytes.
        let r = [0x01, 0x03, 0x00, 0x00, 0xd9, 0x00, 0x03, b'a', b'b', b'c'];
        assert_eq!(response(&r).unwrap(), (200, 3));
        // 404 indexed (27), no body.
        assert_eq!(response(&[0x01, 0x03, 0x00, 0x00, 0xdb]).unwrap(), (404, 0));
        // 301 as a literal naming static entry 24 (4-bit prefix: 15 + 9), plain digits.
        assert_eq!(response(&[0x01, 0x08, 0x00, 0x00, 0x5f, 0x09, 0x03, b'3', b'0', b'1']).unwrap().0, 300);
        // A truncated DATA frame is an error, not a short body.
        assert!(response(&[0x00, 0x05, b'a']).is_err());
    }
}
