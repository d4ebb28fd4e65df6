//! Just enough DER to read a certificate's notAfter for the expiry gauge: rustls validates certificates but
//! does not expose their validity, and a full X.509 crate would be a large dependency for one field.

use crate::dates::days_from_civil;

/// One TLV at the start of `b`: (tag, contents, rest). Definite lengths only, as DER requires.
fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, b) = b.split_first()?;
    let (&first, mut b) = b.split_first()?;
    let len = if first < 0x80 {
        first as usize
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || b.len() < n {
            return None;
        }
        let len = b[..n].iter().fold(0usize, |acc, &x| acc << 8 | x as usize);
        b = &b[n..];
        len
    };
    if b.len() < len {
        return None;
    }
    Some((tag, &b[..len], &b[len..]))
}

const SEQUENCE: u8 = 0x30;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
const VERSION: u8 = 0xa0;

/// The certificate's notAfter as Unix seconds.
pub fn not_after(cert: &[u8]) -> Option<i64> {
    validity(cert).map(|(_, after)| after)
}

/// The certificate's (notBefore, notAfter) as Unix seconds.
pub fn validity(cert: &[u8]) -> Option<(i64, i64)> {
    let (SEQUENCE, cert, _) = tlv(cert)? else { return None };
    let (SEQUENCE, tbs, _) = tlv(cert)? else { return None };
    let mut r = tbs;
    if let (VERSION, _, rest) = tlv(r)? {
        r = rest;
    }
    let (_, _, r) = tlv(r)?; // serialNumber
    let (_, _, r) = tlv(r)?; // signature
    let (_, _, r) = tlv(r)?; // issuer
    let (SEQUENCE, validity, _) = tlv(r)? else { return None };
    let (tag, t, v) = tlv(validity)?; // notBefore
    let before = time(tag, t)?;
    let (tag, t, _) = tlv(v)?;
    Some((before, time(tag, t)?))
}

/// UTCTime `YYMMDDHHMMSSZ` (years 1950-2049, RFC 5280) or GeneralizedTime `YYYYMMDDHHMMSSZ`.
fn time(tag: u8, t: &[u8]) -> Option<i64> {
    let digits = match tag {
        UTC_TIME => 12,
        GENERALIZED_TIME => 14,
        _ => return None,
    };
    if t.len() != digits + 1 || t[digits] != b'Z' || !t[..digits].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let num = |i: usize| (t[i] - b'0') as i64 * 10 + (t[i + 1] - b'0') as i64;
    let (year, rest) = if tag == UTC_TIME {
        let yy = num(0);
        (if yy >= 50 { 1900 + yy } else { 2000 + yy }, 2)
    } else {
        (num(0) * 100 + num(2), 4)
    };
    let (mo, d, h, mi, s) = (num(rest), num(rest + 2), num(rest + 4), num(rest + 6), num(rest + 8));
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    Some(days_from_civil(year, mo, d) * 86400 + h * 3600 + mi * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(time(UTC_TIME, b"700101000000Z"), Some(0));
        assert_eq!(time(UTC_TIME, b"491231235959Z"), Some(2524607999));
        assert_eq!(time(GENERALIZED_TIME, b"20500101000000Z"), Some(2524608000));
        assert_eq!(time(UTC_TIME, b"240229120000Z"), Some(1709208000));
        assert_eq!(time(UTC_TIME, b"241301000000Z"), None);
        assert_eq!(time(UTC_TIME, b"2401010000Z"), None);
        assert_eq!(time(0x05, b"700101000000Z"), None);
    }

    /// A real certificate (openssl req -x509, EC P-256, notAfter 2037-04-25 10:31:45 UTC), as DER.
    #[test]
    fn reads_not_after_of_a_real_certificate() {
        let pem = include_str!("testdata/cert.pem");
        let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = decode_base64(&b64);
        assert_eq!(not_after(&der), Some(2124268305));
        assert_eq!(validity(&der), Some((1795602705, 2124268305)), "notBefore 2026-11-25 10:31:45 UTC");
        assert_eq!(not_after(&der[..der.len() / 2]), None, "truncated");
        assert_eq!(not_after(b"\x30\x03\x02\x01\x01"), None);
    }

    fn decode_base64(s: &str) -> Vec<u8> {
        let val = |c: u8| match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            _ => 63,
        };
        let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
        let mut out = Vec::new();
        for ch in bytes.chunks(4) {
            let mut n = 0u32;
            for (i, &c) in ch.iter().enumerate() {
                n |= (val(c) as u32) << (18 - 6 * i);
            }
            for i in 0..ch.len() - 1 {
                out.push((n >> (16 - 8 * i)) as u8);
            }
        }
        out
    }
}
