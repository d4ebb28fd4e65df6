//! The full loads' thread: a site's full load (every body read and hashed, registry.rs `Phase::Full`) runs here,
//! one at a time, while the pool thread goes on making quick loads. A full load of a big tree takes long (the
//! Python docs: 1,065 files, 67 MB read and hashed, about 1.5 s on a busy 2-core machine); made on the pool
//! thread, every cold site asked for meanwhile waited for it, and an HTTP/1.1 request held for its site's quick
//! load (server/h1.rs, `PARK_MS`) got 503 when the wait passed a second. The registry keeps every decision (what
//! to load, with which budget, and whether the result still applies when it comes back): this thread only runs
//! `loader::load` and hands the result back, waking the pool thread through the pool's eventfd.

use std::os::fd::RawFd;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use crate::site::content::Table;
use crate::site::loader::{self, Report, Settings};
use crate::site_value::SiteValue;

/// One full load to make.
pub struct Job {
    pub id: String,
    /// The site's load generation when the job was sent: the result applies only if it is still the same.
    pub gen: u64,
    pub settings: Settings,
    pub value: Arc<SiteValue>,
}

/// A full load made.
pub struct Done {
    pub id: String,
    pub gen: u64,
    pub result: Result<(Table, Report), String>,
    pub ms: u64,
}

/// The thread's two ends, held by the registry.
pub struct FullLoads {
    jobs: Sender<Job>,
    done: Receiver<Done>,
}

impl FullLoads {
    /// Starts the thread; each result is followed by a write to `wake_fd` (the pool's eventfd; -1: the pool
    /// thread polls instead).
    pub fn start(wake_fd: RawFd) -> FullLoads {
        let (jobs, rx) = channel::<Job>();
        let (tx, done) = channel::<Done>();
        std::thread::Builder::new()
            .name("pool-full".into())
            .spawn(move || {
                for job in rx {
                    let started = std::time::Instant::now();
                    let result = loader::load(&job.settings, &job.value, None, &mut |_| {});
                    let ms = started.elapsed().as_millis() as u64;
                    if tx.send(Done { id: job.id, gen: job.gen, result, ms }).is_err() {
                        return;
                    }
                    if wake_fd >= 0 {
                        let _ = crate::sys::io::write(wake_fd, &1u64.to_ne_bytes());
                    }
                }
            })
            .expect("spawn the pool's full-load thread");
        FullLoads { jobs, done }
    }

    pub fn send(&self, job: Job) {
        // The thread lives as long as the process: a send fails only if it panicked (panic = abort).
        let _ = self.jobs.send(job);
    }

    /// A finished load, if any.
    pub fn finished(&self) -> Option<Done> {
        self.done.try_recv().ok()
    }
}
