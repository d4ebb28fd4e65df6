//! Unidirectional streams a client opens (RFC 9114 §6.2, RFC 9204 §4.2): the stream type at their start, and
//! the rule that each critical one exists at most once and never closes.
//!
//! A server receives the client's control stream (0x00), QPACK encoder (0x02) and decoder (0x03) streams. A push
//! stream (0x01) from a client is H3_STREAM_CREATION_ERROR; reserved (grease) and unknown types are read no
//! further (the transport stops the stream with H3_STREAM_CREATION_ERROR, which §6.2 allows) and never an error.

use super::error::{err, Code, ConnError};
use super::varint;

pub const CONTROL: u64 = 0x00;
pub const PUSH: u64 = 0x01;
pub const QPACK_ENCODER: u64 = 0x02;
pub const QPACK_DECODER: u64 = 0x03;

/// What a unidirectional stream is, from its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Control,
    QpackEncoder,
    QpackDecoder,
    /// Reserved or unknown: stop reading it (STOP_SENDING H3_STREAM_CREATION_ERROR) and forget it.
    Ignored(u64),
}

/// Reads a stream's type, which can arrive split across reads (a varint of up to 8 bytes).
#[derive(Default)]
pub struct TypeReader {
    bytes: [u8; 8],
    len: u8,
}

impl TypeReader {
    /// Consumes the type's bytes from `input`: how many, and the kind once the type is whole.
    pub fn read(&mut self, input: &[u8]) -> Result<(usize, Option<Kind>), ConnError> {
        let Some(&first) = self.bytes[..self.len as usize].first().or(input.first()) else { return Ok((0, None)) };
        let need = varint::len_of(first);
        let take = (need - self.len as usize).min(input.len());
        self.bytes[self.len as usize..self.len as usize + take].copy_from_slice(&input[..take]);
        self.len += take as u8;
        let Some((ty, _)) = varint::decode(&self.bytes[..self.len as usize]) else { return Ok((take, None)) };
        let kind = match ty {
            CONTROL => Kind::Control,
            QPACK_ENCODER => Kind::QpackEncoder,
            QPACK_DECODER => Kind::QpackDecoder,
            PUSH => return Err(err(Code::StreamCreationError, "a push stream from a client")),
            other => Kind::Ignored(other),
        };
        Ok((take, Some(kind)))
    }
}

/// The critical streams a client opened: one of each at most (§6.2.1, RFC 9204 §4.2).
#[derive(Default, Debug)]
pub struct Critical {
    control: bool,
    encoder: bool,
    decoder: bool,
}

impl Critical {
    /// A new stream of `kind`: a second control, encoder or decoder stream is H3_STREAM_CREATION_ERROR.
    pub fn open(&mut self, kind: Kind) -> Result<(), ConnError> {
        let slot = match kind {
            Kind::Control => &mut self.control,
            Kind::QpackEncoder => &mut self.encoder,
            Kind::QpackDecoder => &mut self.decoder,
            Kind::Ignored(_) => return Ok(()),
        };
        if *slot {
            return Err(err(Code::StreamCreationError, "a second control, QPACK encoder or decoder stream"));
        }
        *slot = true;
        Ok(())
    }

    /// A stream of `kind` ended (FIN or reset): a critical one closing is H3_CLOSED_CRITICAL_STREAM.
    pub fn closed(kind: Kind) -> Result<(), ConnError> {
        match kind {
            Kind::Ignored(_) => Ok(()),
            _ => Err(err(Code::ClosedCriticalStream, "the client closed a critical stream")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_whole_and_split() {
        let mut r = TypeReader::default();
        assert_eq!(r.read(&[0x00, 0x04]), Ok((1, Some(Kind::Control))), "type only, the SETTINGS after it stays");
        // A grease type 0x1f * 1000 + 0x21 = 31,033 takes a 4-byte varint; fed a byte at a time.
        let mut enc = Vec::new();
        varint::put(&mut enc, 31_033);
        let mut r = TypeReader::default();
        for (i, b) in enc.iter().enumerate() {
            let want = if i + 1 == enc.len() { Some(Kind::Ignored(31_033)) } else { None };
            assert_eq!(r.read(std::slice::from_ref(b)), Ok((1, want)));
        }
        let mut r = TypeReader::default();
        assert_eq!(r.read(&[]), Ok((0, None)));
        assert_eq!(r.read(&[0x40]), Ok((1, None)));
        assert_eq!(r.read(&[0x02, 0xff]), Ok((1, Some(Kind::QpackEncoder))), "0x4002 is 2, non-minimal");
        assert_eq!(TypeReader::default().read(&[0x03]), Ok((1, Some(Kind::QpackDecoder))));
        assert_eq!(TypeReader::default().read(&[0x01, 0x00]).unwrap_err().code, Code::StreamCreationError);
    }

    #[test]
    fn one_of_each_and_never_closed() {
        let mut c = Critical::default();
        for k in [Kind::Control, Kind::QpackEncoder, Kind::QpackDecoder, Kind::Ignored(0x21), Kind::Ignored(0x21)] {
            c.open(k).unwrap();
        }
        for k in [Kind::Control, Kind::QpackEncoder, Kind::QpackDecoder] {
            assert_eq!(c.open(k).unwrap_err().code, Code::StreamCreationError, "{k:?}");
            assert_eq!(Critical::closed(k).unwrap_err().code, Code::ClosedCriticalStream, "{k:?}");
        }
        assert_eq!(Critical::closed(Kind::Ignored(7)), Ok(()));
    }
}
