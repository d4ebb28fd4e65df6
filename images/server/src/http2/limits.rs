//! What one connection may cost us, and the meters that enforce it. Every bound is a count of frames, streams
//! or bytes the peer sent or we queued, never a clock, so the defences are deterministic (and testable).

/// The limits of one connection. `Default` holds the values the server uses; the reasons are in `http2/mod.rs`.
#[derive(Clone, Debug)]
pub struct Limits {
    /// SETTINGS_MAX_CONCURRENT_STREAMS: more open streams are refused with REFUSED_STREAM.
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE for request bodies (a static server reads none it keeps).
    pub initial_window: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: decoded request fields (RFC accounting, +32 per field); over it, 431.
    pub max_header_list: u32,
    /// SETTINGS_HEADER_TABLE_SIZE: our HPACK decoder's dynamic table (and the bound on size updates).
    pub header_table_size: u32,
    /// Compressed bytes of one header block across HEADERS + CONTINUATION; over it, GOAWAY ENHANCE_YOUR_CALM.
    pub max_header_block: u32,
    /// Frames in one header block (HEADERS plus CONTINUATIONs); over it, GOAWAY ENHANCE_YOUR_CALM.
    pub max_block_frames: u32,
    /// Bytes of control frames and response heads queued for the peer and not yet taken by `write`; over it
    /// (a peer that sends but does not read), GOAWAY ENHANCE_YOUR_CALM.
    pub max_queued: u32,
    /// Frames that do no request work (SETTINGS, PING, PRIORITY, WINDOW_UPDATE, unknown types, empty DATA,
    /// HEADERS or CONTINUATION, frames for closed streams) allowed between two requests, less one per DATA
    /// frame we send; over it, GOAWAY ENHANCE_YOUR_CALM.
    pub max_overhead_frames: u32,
    /// Rapid reset: streams the peer cancels (RST_STREAM before our response ended) or we do not open (refused,
    /// 431, malformed, ignored after our GOAWAY), counted per `reset_window` streams opened; over `max_resets` in
    /// one window, GOAWAY ENHANCE_YOUR_CALM.
    pub reset_window: u32,
    pub max_resets: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_concurrent_streams: 128,
            initial_window: 65_535,
            max_header_list: 16 * 1024,
            header_table_size: 4096,
            max_header_block: 32 * 1024,
            max_block_frames: 16,
            max_queued: 64 * 1024,
            max_overhead_frames: 1000,
            reset_window: 512,
            max_resets: 256,
        }
    }
}

/// The flood meters of one connection.
#[derive(Default, Debug)]
pub struct Meters {
    overhead: u32,
    resets: u32,
    opened: u32,
}

impl Meters {
    /// A frame that did no request work; false when the budget is spent.
    #[inline]
    pub fn overhead(&mut self, l: &Limits) -> bool {
        self.overhead += 1;
        self.overhead <= l.max_overhead_frames
    }

    /// We sent a DATA frame: the frames that asked for it (WINDOW_UPDATEs) were useful after all.
    #[inline]
    pub fn data_sent(&mut self) {
        self.overhead = self.overhead.saturating_sub(1);
    }

    /// A request was accepted.
    #[inline]
    pub fn opened(&mut self, l: &Limits) {
        self.overhead = 0;
        self.opened += 1;
        if self.opened >= l.reset_window {
            self.opened = 0;
            self.resets = 0;
        }
    }

    /// A stream cancelled by the peer or not opened by us; false when the window's budget is spent.
    #[inline]
    pub fn reset(&mut self, l: &Limits) -> bool {
        self.resets += 1;
        self.resets <= l.max_resets
    }
}
