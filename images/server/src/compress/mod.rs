//! Compression: the codecs and what is worth encoding (codec.rs), Accept-Encoding negotiation (encoding.rs),
//! the store of encodings by content digest (encodings.rs), the background encoder (encoder.rs, and encoder_state.rs: what it shares with the process) and its governor
//! that spends only the CPU serving leaves (slack.rs over the real counters in cgroup_cpu.rs), and the build-time
//! `precompress` subcommand.

pub mod cgroup_cpu;
pub mod codec;
pub mod encoder;
pub mod encoder_state;
pub mod encoding;
pub mod encodings;
pub mod precompress;
pub mod slack;
