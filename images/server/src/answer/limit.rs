//! The fair-share check (fairshare/), between routing a request to its site and answering it: a client past its
//! share of the site gets `429 Too Many Requests` with `Retry-After` (whole seconds until its next token), before
//! anything else is looked at — the point is to spend as little as possible on it. The same check for HTTP/1.1
//! (server/h1.rs), HTTP/2 (server/h2.rs) and HTTP/3, each framing the reply its way.

use std::net::SocketAddr;

use crate::answer::reply::Reply;
use crate::fairshare::{self, bucket, Clients};

/// A worker's limiter and the facts of the request the check needs besides the site.
pub struct Limiter<'a> {
    pub clients: &'a mut Clients,
    pub counters: &'a fairshare::table::Counters,
    /// The worker's monotonic clock, in milliseconds.
    pub now_ms: u64,
}

/// None when the request may be answered; else the 429 it gets. `rate` is the site's `limits.perClient` (None:
/// off), `site` a number naming the site in the worker's table (0 for the single site), `peer` the client as
/// guard::client names it (None when the socket did not say: not limited, since there is no one to charge).
#[inline]
pub fn check<'r>(
    l: &mut Limiter,
    rate: Option<&fairshare::Rate>,
    site: u64,
    peer: Option<SocketAddr>,
    head: bool,
) -> Option<Reply<'r>> {
    let (rate, peer) = (rate?, peer?);
    let key = fairshare::client::key(peer.ip());
    match l.clients.take(site, key, rate, l.now_ms.saturating_mul(1000), l.counters) {
        Ok(()) => None,
        Err(wait_us) => {
            crate::counters::bump(&l.counters.limited, 1);
            Some(Reply::retry_after(429, bucket::retry_after_s(wait_us), head))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::reply::{Body, Head};
    use std::sync::atomic::Ordering;

    #[test]
    fn past_the_burst_a_client_gets_429_with_the_seconds_until_its_token() {
        let mut clients = Clients::with_bytes(4096, 1);
        let counters = fairshare::table::Counters::default();
        let rate = fairshare::Rate { requests: 1, period_s: 600, burst: 2 };
        let a: SocketAddr = "192.0.2.1:5000".parse().unwrap();
        let b: SocketAddr = "192.0.2.2:5000".parse().unwrap();
        let mut l = Limiter { clients: &mut clients, counters: &counters, now_ms: 60_000 };
        assert!(check(&mut l, Some(&rate), 0, Some(a), false).is_none());
        assert!(check(&mut l, Some(&rate), 0, Some(a), false).is_none());
        let r = check(&mut l, Some(&rate), 0, Some(a), false).expect("the third is refused");
        assert_eq!(r.status, 429);
        assert!(matches!(r.head, Head::Later { after: 600 }));
        assert!(matches!(r.body, Body::Static(b"429 Too Many Requests\n")));
        let h = check(&mut l, Some(&rate), 0, Some(a), true).expect("HEAD too");
        assert!(matches!(h.body, Body::None));
        assert!(check(&mut l, Some(&rate), 0, Some(b), false).is_none(), "another address is not limited");
        assert!(check(&mut l, Some(&rate), 1, Some(a), false).is_none(), "nor the same address on another site");
        assert!(check(&mut l, None, 0, Some(a), false).is_none(), "off: never limited");
        assert!(check(&mut l, Some(&rate), 0, None, false).is_none(), "no address: no one to charge");
        // Ten seconds on: 590 s left, said in whole seconds.
        l.now_ms += 10_000;
        let r = check(&mut l, Some(&rate), 0, Some(a), false).unwrap();
        assert!(matches!(r.head, Head::Later { after: 590 }));
        assert_eq!(counters.limited.load(Ordering::Relaxed), 3);
    }
}
