//! Certificate rotation, noticed by reading both PEM files once a second on the control thread and comparing
//! their bytes with the last material tried. Reading (a few KB) rather than watching: a Secret volume swaps
//! the `..data` symlink under the files, and content comparison catches that, a plain rewrite, and a rewrite
//! that keeps the mtime alike, with no inotify bookkeeping across symlink swaps.

use std::time::{Duration, Instant};

use super::material::{self, Material};
use super::TlsState;
use crate::config::TlsFiles;
use crate::counters::bump;
use crate::log::{self, V};

pub const INTERVAL: Duration = Duration::from_secs(1);

pub struct CertWatch {
    files: TlsFiles,
    /// The last material built (or tried: bad material is reported once, not every second).
    last: Material,
    next: Instant,
}

impl CertWatch {
    pub fn new(files: TlsFiles, started_with: Material) -> CertWatch {
        CertWatch { files, last: started_with, next: Instant::now() + INTERVAL }
    }

    /// How long the control loop may sleep before the next check is due.
    pub fn due_in(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    /// Checks the files when a second has passed since the last check; installs new good material, keeps
    /// the old configuration serving on bad material (and says why).
    pub fn poll(&mut self, p: &TlsState) {
        if Instant::now() < self.next {
            return;
        }
        self.next = Instant::now() + INTERVAL;
        let mut m = match material::read_files(&self.files) {
            Ok(m) => m,
            // Missing for a moment (a writer that deletes then creates) or for good: the bytes did not change
            // as far as we know, so nothing is counted; the next readable change is.
            Err(_) => return,
        };
        if m == self.last {
            return;
        }
        let mut result = material::build(&self.files, &m, &p.resumption);
        if result.is_err() {
            // The certificate may have been read before a rotation and the key after it: read again, and
            // only a pair that stays the same counts as bad.
            if let Ok(again) = material::read_files(&self.files) {
                if again != m {
                    m = again;
                    result = material::build(&self.files, &m, &p.resumption);
                }
            }
        }
        self.last = m;
        // Outside its validity the new pair is refused like a malformed one: the old certificate keeps serving.
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        let result = result.and_then(|b| {
            b.valid_at(now).map(|()| b).map_err(|e| format!("--tls-cert {}: {e}", self.files.cert.display()))
        });
        match result {
            Ok(b) => {
                let not_after = b.not_after;
                p.install(b);
                bump(&p.reloads_ok, 1);
                log::info(
                    "tls certificate reloaded; new handshakes use it",
                    &[("cert", V::S(&self.files.cert.display().to_string())), ("not_after", V::U(not_after as u64))],
                );
            }
            Err(e) => {
                bump(&p.reloads_failed, 1);
                p.refused.set(&e);
                log::error(
                    "tls certificate reload failed; the previous certificate keeps serving",
                    &[("error", V::S(&e))],
                );
            }
        }
    }
}
