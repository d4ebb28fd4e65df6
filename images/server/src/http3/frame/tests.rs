//! The frame reader against RFC 9114 §7's layouts, in every split, and its bounds.

use super::*;
use crate::http3::testutil::{hex, Rng};

/// Reads all of `input` in pieces of `chunk` bytes; returns a description of each frame.
fn frames(role: Role, limits: Limits, input: &[u8], chunk: usize) -> Result<Vec<String>, ConnError> {
    let mut r = FrameReader::new(role, limits);
    let mut out: Vec<String> = Vec::new();
    for piece in input.chunks(chunk.max(1)) {
        let mut at = 0;
        loop {
            let (used, f) = r.read(&piece[at..])?;
            at += used;
            match f {
                Some(Frame::Data(d)) => match out.last_mut() {
                    // Merge the pieces of one DATA frame: a split must not change what the frames say.
                    Some(s) if s.starts_with("data+") => s.push_str(&String::from_utf8_lossy(d)),
                    _ => out.push(format!("data+{}", String::from_utf8_lossy(d))),
                },
                Some(f) => out.push(format!("{f:?}")),
                None if used == 0 => break,
                None => {}
            }
            assert!(r.heap_bytes() <= limits.max_headers.max(limits.max_settings) as usize);
        }
        assert!(at == piece.len(), "every byte consumed");
    }
    assert!(r.at_boundary(), "input ends on a frame boundary");
    Ok(out)
}

#[test]
fn rfc9114_layouts_request_stream() {
    // HEADERS (0x01) of 4 bytes; DATA (0x00) "hello" with a two-byte (non-minimal) length; a grease frame
    // 0x21 with a 2-byte type varint 0x4021 and 3 bytes; DATA of length 0.
    let input = hex("01 04 0000 d1d7  00 4005 68656c6c6f  4021 03 616263  00 00");
    let want = ["Headers([0, 0, 209, 215])", "data+hello", "Unknown(33)", "data+"];
    for chunk in 1..=input.len() {
        let got = frames(Role::Request, Limits::default(), &input, chunk).unwrap();
        // Splits cut DATA into pieces that the helper merges; an empty DATA frame stays its own entry.
        assert_eq!(got, want, "chunk {chunk}");
    }
}

#[test]
fn rfc9114_layouts_control_stream() {
    // SETTINGS (0x04): MAX_FIELD_SECTION_SIZE (0x06) = 16384 (0x4000 as a 4-byte varint 0x80004000);
    // GOAWAY (0x07) push ID 4; MAX_PUSH_ID (0x0d) 2-byte varint 300; CANCEL_PUSH (0x03) 0.
    let input = hex("04 05 06 80004000  07 01 04  0d 02 412c  03 01 00");
    let want = ["Settings([6, 128, 0, 64, 0])", "Goaway(4)", "MaxPushId(300)", "CancelPush(0)"];
    for chunk in 1..=input.len() {
        assert_eq!(frames(Role::Control, Limits::default(), &input, chunk).unwrap(), want, "chunk {chunk}");
    }
}

#[test]
fn payload_must_match_its_fields() {
    // §7.1: a payload longer or shorter than its fields is H3_FRAME_ERROR; a one-varint frame of length 0 or
    // over 8 cannot be valid at its head.
    for input in ["07 02 04 00", "07 03 4004 00", "07 01 40", "0d 01 40", "07 00", "03 09 c000000000000000 00"] {
        let input = hex(input);
        for chunk in [1, input.len()] {
            let e = frames(Role::Control, Limits::default(), &input, chunk);
            assert_eq!(e.unwrap_err().code, Code::FrameError, "{input:02x?} by {chunk}");
        }
    }
}

#[test]
fn frames_in_the_wrong_place() {
    let cases: [(Role, &str, Code); 8] = [
        (Role::Control, "00 00", Code::FrameUnexpected),
        (Role::Control, "01 00", Code::FrameUnexpected),
        (Role::Request, "04 00", Code::FrameUnexpected),
        (Role::Request, "07 01 00", Code::FrameUnexpected),
        (Role::Request, "05 02 00 00", Code::FrameUnexpected),
        (Role::Control, "05 02 00 00", Code::FrameUnexpected),
        (Role::Control, "02 00", Code::FrameUnexpected),
        (Role::Request, "09 00", Code::FrameUnexpected),
    ];
    for (role, input, code) in cases {
        assert_eq!(frames(role, Limits::default(), &hex(input), 1).unwrap_err().code, code, "{role:?} {input}");
    }
}

#[test]
fn announced_lengths_never_buffered_beyond_bounds() {
    let limits = Limits { max_headers: 64, max_settings: 16 };
    // A SETTINGS over the bound is refused at its head, whatever follows.
    let mut s = Vec::new();
    put_head(&mut s, SETTINGS, 17);
    assert_eq!(frames(Role::Control, limits, &s, 1).unwrap_err().code, Code::ExcessiveLoad);
    // A HEADERS announcing 2^62 - 1 bytes: reported at its head, then skipped with nothing kept.
    let mut h = Vec::new();
    put_head(&mut h, HEADERS, varint::MAX);
    h.extend_from_slice(&[0x55; 1000]);
    let mut r = FrameReader::new(Role::Request, limits);
    let (used, f) = r.read(&h).unwrap();
    assert_eq!(f, Some(Frame::HeadersTooLarge(varint::MAX)));
    let (rest, f) = r.read(&h[used..]).unwrap();
    assert_eq!((rest, f), (1000, None));
    assert_eq!(r.heap_bytes(), 0);
    assert!(!r.at_boundary());
    // An unknown frame of 2^62 - 1 bytes likewise.
    let mut u = Vec::new();
    put_head(&mut u, 0x1f * 40 + 0x21, varint::MAX);
    u.extend_from_slice(&[0; 100]);
    let mut r = FrameReader::new(Role::Control, limits);
    assert_eq!(r.read(&u).unwrap().1, Some(Frame::Unknown(0x1f * 40 + 0x21)));
    assert_eq!(r.heap_bytes(), 0);
}

#[test]
fn grease_values() {
    let grease: Vec<u64> = (0..5).map(|n| 0x1f * n + 0x21).collect();
    assert_eq!(grease, [0x21, 0x40, 0x5f, 0x7e, 0x9d]);
    assert!(grease.iter().all(|&g| is_grease(g)));
    assert!(![0, 1, 0x20, 0x22, 0x3f, 0x41].iter().any(|&v| is_grease(v)));
}

#[test]
fn property_written_frames_read_back_in_any_split() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..300 {
        let mut input = Vec::new();
        let mut want = Vec::new();
        for _ in 0..(rng.next() % 6 + 1) {
            let len = (rng.next() % 70) as usize;
            let payload: Vec<u8> = (0..len).map(|_| b'a' + (rng.next() % 26) as u8).collect();
            match rng.next() % 3 {
                0 => {
                    put_head(&mut input, HEADERS, len as u64);
                    input.extend_from_slice(&payload);
                    want.push(if len > 64 {
                        format!("HeadersTooLarge({len})")
                    } else {
                        format!("{:?}", Frame::Headers(&payload))
                    });
                }
                1 => {
                    put_head(&mut input, DATA, len as u64);
                    input.extend_from_slice(&payload);
                    want.push(format!("data+{}", String::from_utf8_lossy(&payload)));
                }
                _ => {
                    let ty = 0x1f * (rng.next() % 1000) + 0x21;
                    put_head(&mut input, ty, len as u64);
                    input.extend_from_slice(&payload);
                    want.push(format!("Unknown({ty})"));
                }
            }
        }
        // Merge consecutive DATA frames as the helper does.
        let mut merged: Vec<String> = Vec::new();
        for w in want {
            match merged.last_mut() {
                Some(m) if m.starts_with("data+") && w.starts_with("data+") => m.push_str(&w[5..]),
                _ => merged.push(w),
            }
        }
        let chunk = (rng.next() % 20 + 1) as usize;
        let limits = Limits { max_headers: 64, max_settings: 16 };
        assert_eq!(frames(Role::Request, limits, &input, chunk).unwrap(), merged, "round {round} chunk {chunk}");
    }
}

#[test]
fn goaway_writer() {
    let mut o = Vec::new();
    put_goaway(&mut o, 8);
    assert_eq!(o, [0x07, 0x01, 0x08]);
    o.clear();
    put_goaway(&mut o, (1 << 62) - 4);
    assert_eq!(o.len(), 10);
    assert_eq!(frames(Role::Control, Limits::default(), &o, 3).unwrap(), [format!("Goaway({})", (1u64 << 62) - 4)]);
}
