//! The last content load's failure, for those who cannot read the log: the operator reads it from the admin port
//! (the gauge `hyperstatic_content_load_failed` and `GET /load-error`) while the previous content keeps serving,
//! and from the container's termination message (`--termination-log`) when the first load fails and the process
//! exits before it ever served. The message is the loader's: for a bad `_redirects` or `_headers` rule it names the
//! file and the line.
//!
//! Contract with the operator (controllers/staticsite/loadfailure.go, tested in internal/contract): the
//! termination message starts with TERMINATION_PREFIX, and both carry at most MAX_MESSAGE bytes of the message.

use std::path::Path;
use std::sync::Mutex;

/// The most bytes of a message kept: enough for a file, a line number and the offending rule, far below the 4 KiB
/// Kubernetes keeps of a termination message, and small enough for a status condition.
pub const MAX_MESSAGE: usize = 1024;

/// How the termination message starts, so the operator tells a content failure from any other reason to exit.
pub const TERMINATION_PREFIX: &str = "content load failed: ";

/// `msg` cut to MAX_MESSAGE bytes on a character boundary, with `…` when it was cut.
pub fn bounded(msg: &str) -> String {
    if msg.len() <= MAX_MESSAGE {
        return msg.to_string();
    }
    let ell = "…";
    let mut end = MAX_MESSAGE - ell.len();
    while !msg.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ell}", &msg[..end])
}

/// The failure of the last load or reload; None once a load succeeds.
#[derive(Default)]
pub struct LastLoadError(Mutex<Option<String>>);

impl LastLoadError {
    pub fn set(&self, msg: &str) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(bounded(msg));
    }

    pub fn clear(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Writes the termination message for a first load that failed. Best effort: the process exits anyway, and the
/// log has the error too.
pub fn write_termination_log(path: &Path, msg: &str) -> std::io::Result<()> {
    std::fs::write(path, format!("{TERMINATION_PREFIX}{}", bounded(msg)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_cuts_on_a_character_boundary() {
        assert_eq!(bounded("_redirects line 3: bad"), "_redirects line 3: bad");
        let long = "é".repeat(MAX_MESSAGE);
        let b = bounded(&long);
        assert!(b.len() <= MAX_MESSAGE && b.ends_with('…'), "{}", b.len());
        assert_eq!(bounded(&"a".repeat(MAX_MESSAGE)).len(), MAX_MESSAGE);
    }

    #[test]
    fn set_and_clear() {
        let e = LastLoadError::default();
        assert_eq!(e.get(), None);
        e.set("x");
        assert_eq!(e.get().as_deref(), Some("x"));
        e.clear();
        assert_eq!(e.get(), None);
    }
}
