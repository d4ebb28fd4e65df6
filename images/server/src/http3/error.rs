//! HTTP/3 and QPACK error codes (RFC 9114 §8.1, RFC 9204 §6) and the connection error the parsers return.

/// An application error code carried by CONNECTION_CLOSE, RESET_STREAM or STOP_SENDING.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    NoError = 0x100,
    GeneralProtocolError = 0x101,
    InternalError = 0x102,
    StreamCreationError = 0x103,
    ClosedCriticalStream = 0x104,
    FrameUnexpected = 0x105,
    FrameError = 0x106,
    ExcessiveLoad = 0x107,
    IdError = 0x108,
    SettingsError = 0x109,
    MissingSettings = 0x10a,
    RequestRejected = 0x10b,
    RequestCancelled = 0x10c,
    RequestIncomplete = 0x10d,
    MessageError = 0x10e,
    ConnectError = 0x10f,
    VersionFallback = 0x110,
    QpackDecompressionFailed = 0x200,
    QpackEncoderStreamError = 0x201,
    QpackDecoderStreamError = 0x202,
}

impl Code {
    /// The value on the wire.
    pub fn value(self) -> u64 {
        self as u64
    }
}

/// A connection error: the connection is closed with `code`; `why` names the rule for the log and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnError {
    pub code: Code,
    pub why: &'static str,
}

/// Shorthand for the parsers.
pub(crate) const fn err(code: Code, why: &'static str) -> ConnError {
    ConnError { code, why }
}
