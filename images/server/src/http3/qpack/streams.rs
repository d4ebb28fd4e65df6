//! The client's QPACK encoder and decoder streams (RFC 9204 §4.3, §4.4) when our table capacity is 0 and we
//! never refer to the client's table.
//!
//! * Encoder stream: the only valid instruction is Set Dynamic Table Capacity to 0, the single byte 0x20
//!   (0x21..=0x3f, or 0x3f with continuation bytes, is a capacity above our 0: §4.3.1). Every insertion and
//!   duplication needs room in a table of capacity 0, which it cannot have: QPACK_ENCODER_STREAM_ERROR.
//! * Decoder stream: Stream Cancellation is valid (the client abandoned a section; we keep nothing for it).
//!   Section Acknowledgment refers to a section with dynamic references, and we send none; any Insert Count
//!   Increment is zero (invalid) or exceeds the zero entries we inserted: QPACK_DECODER_STREAM_ERROR (§4.4).
//!
//! So each byte is decided alone or as part of one prefixed integer; nothing is buffered, and a flood costs one
//! comparison per byte (QUIC flow control bounds the bytes).

use crate::http3::error::{err, Code, ConnError};

/// The client's encoder stream after its type.
#[derive(Default)]
pub struct EncoderStream;

impl EncoderStream {
    pub fn read(&mut self, input: &[u8]) -> Result<(), ConnError> {
        match input.iter().find(|&&b| b != 0x20) {
            None => Ok(()),
            Some(b) if b & 0xe0 == 0x20 => Err(err(Code::QpackEncoderStreamError, "a table capacity above our 0")),
            Some(_) => Err(err(Code::QpackEncoderStreamError, "an insertion into a table of capacity 0")),
        }
    }
}

/// The client's decoder stream after its type.
#[derive(Default)]
pub struct DecoderStream {
    /// Inside a Stream Cancellation's integer (its continuation bytes, how many so far).
    continuation: Option<u8>,
}

impl DecoderStream {
    pub fn read(&mut self, input: &[u8]) -> Result<(), ConnError> {
        for &b in input {
            if let Some(n) = self.continuation {
                // A stream ID is at most 62 bits: 9 continuation bytes at most after the 6-bit prefix.
                if n >= 9 {
                    return Err(err(Code::QpackDecoderStreamError, "a stream ID over 62 bits"));
                }
                self.continuation = if b & 0x80 != 0 { Some(n + 1) } else { None };
                continue;
            }
            match b {
                0x80..=0xff => {
                    return Err(err(
                        Code::QpackDecoderStreamError,
                        "a Section Acknowledgment, and we refer to no table",
                    ))
                }
                0x40..=0x7f => {
                    if b & 0x3f == 0x3f {
                        self.continuation = Some(0);
                    }
                }
                _ => {
                    return Err(err(
                        Code::QpackDecoderStreamError,
                        "an Insert Count Increment, and we inserted nothing",
                    ))
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoder_stream() {
        assert_eq!(EncoderStream.read(&[0x20, 0x20]), Ok(()), "capacity 0, twice");
        assert_eq!(EncoderStream.read(&[]), Ok(()));
        // RFC 9204 B.2's first instruction: Set Dynamic Table Capacity = 220.
        assert_eq!(EncoderStream.read(&[0x3f, 0xbd, 0x01]).unwrap_err().code, Code::QpackEncoderStreamError);
        for insert in [0xc0u8, 0x80, 0x4a, 0x40, 0x02, 0x00] {
            assert_eq!(
                EncoderStream.read(&[0x20, insert]).unwrap_err().code,
                Code::QpackEncoderStreamError,
                "{insert:#x}"
            );
        }
    }

    #[test]
    fn decoder_stream() {
        let mut d = DecoderStream::default();
        // RFC 9204 B.4: Stream Cancellation (stream 8), then one with a long stream ID split across reads.
        d.read(&[0x48]).unwrap();
        d.read(&[0x7f, 0xff]).unwrap();
        d.read(&[0xff, 0x01, 0x48]).unwrap();
        // RFC 9204 B.2 and B.3: Section Acknowledgment (stream 4), Insert Count Increment (1); and increment 0.
        for bad in [0x84u8, 0x01, 0x00] {
            assert_eq!(DecoderStream::default().read(&[bad]).unwrap_err().code, Code::QpackDecoderStreamError);
        }
        let mut d = DecoderStream::default();
        assert_eq!(
            d.read(&[0x7f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80]).unwrap_err().code,
            Code::QpackDecoderStreamError
        );
    }
}
