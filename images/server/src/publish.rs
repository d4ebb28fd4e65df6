//! `Published<T>`: what the control thread replaces at reload and every worker reads, the content table and the
//! TLS configuration. A new value is installed under a mutex and a generation is bumped; a worker keeps a `Local`
//! copy and compares the generation once per loop iteration (one atomic load, no lock), taking the mutex and
//! cloning the Arc only when it changed. Readers keep the value they hold until they look again, so a swap never
//! touches a batch being answered or a connection's TLS session.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub struct Published<T> {
    value: Mutex<Arc<T>>,
    generation: AtomicU64,
}

impl<T> Published<T> {
    pub fn new(first: Arc<T>) -> Published<T> {
        Published { value: Mutex::new(first), generation: AtomicU64::new(0) }
    }

    /// Bumped by every install.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current value and its generation (takes the mutex: not for the per-request path).
    pub fn get(&self) -> (Arc<T>, u64) {
        let g = self.value.lock().unwrap_or_else(|e| e.into_inner());
        (g.clone(), self.generation.load(Ordering::Acquire))
    }

    /// Installs `v`; readers pick it up on their next look.
    pub fn set(&self, v: Arc<T>) {
        let mut g = self.value.lock().unwrap_or_else(|e| e.into_inner());
        *g = v;
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Installs `v` only if nothing else was installed since `generation` was read; false otherwise.
    pub fn set_if(&self, generation: u64, v: Arc<T>) -> bool {
        let mut g = self.value.lock().unwrap_or_else(|e| e.into_inner());
        if self.generation.load(Ordering::Acquire) != generation {
            return false;
        }
        *g = v;
        self.generation.fetch_add(1, Ordering::AcqRel);
        true
    }
}

/// A reader's copy of a published value and the generation it was read at.
pub struct Local<T> {
    pub value: Arc<T>,
    pub generation: u64,
}

impl<T> Local<T> {
    pub fn new(p: &Published<T>) -> Local<T> {
        let (value, generation) = p.get();
        Local { value, generation }
    }

    /// Takes the published value if it changed since this copy was read (one atomic load when it did not); true
    /// when it did.
    #[inline]
    pub fn refresh(&mut self, p: &Published<T>) -> bool {
        if p.generation() == self.generation {
            return false;
        }
        (self.value, self.generation) = p.get();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_copy_follows_installs_and_set_if_refuses_a_stale_generation() {
        let p = Published::new(Arc::new(1));
        let mut l = Local::new(&p);
        assert!(!l.refresh(&p), "nothing installed yet");
        p.set(Arc::new(2));
        assert_eq!(*l.value, 1, "a copy keeps its value until it looks again");
        assert!(l.refresh(&p));
        assert_eq!((*l.value, l.generation), (2, 1));
        assert!(!p.set_if(0, Arc::new(3)), "read before the last install");
        assert!(p.set_if(1, Arc::new(3)));
        assert!(l.refresh(&p));
        assert_eq!(*l.value, 3);
    }
}
