//! The connection memory budget: how much memory one worker's connections may hold together, whatever their
//! number (the count cap, `--max-connections-per-worker`, bounds slots, not bytes).
//!
//! ## The share: an eighth of the limit, split over the workers
//!
//! `per worker = limit / RESERVE_DIVISOR / workers`, at least `PRE_HEAD_MIN × PRE_HEAD_COST` (512 KiB).
//!
//! memory.rs splits the limit three ways: two content budgets (the table serving and the one a reload builds),
//! `RESERVE_FIXED` for the server itself, and `limit / RESERVE_DIVISOR` (an eighth) for what grows with load.
//! What grows with load is connections: their TLS sessions and HTTP/2 state (HPACK tables the clients fill),
//! partial heads, unsent output, and the socket memory the kernel charges to the same cgroup. So that eighth is
//! the connections' budget, all of them together: the sixteenth `pre_head_per_worker` gives connections still
//! waiting for their request head is inside it (they are charged here too; that count bound only stops them from
//! crowding out the established ones). 128 MiB → 16 MiB of connections (8 MiB a worker with 2 workers); 96 MiB
//! and one worker → 12 MiB, about 1,200 idle HTTPS/1.1 connections at their measured cost (server/budget.rs).
//!
//! Without a limit there is no budget: `--max-connections-per-worker` alone bounds connections, as before.
//! The worker charges each connection what it holds and, past the budget, closes idle connections (oldest idle
//! first) or refuses new ones (server/budget.rs).

use super::memory::{PRE_HEAD_COST, PRE_HEAD_MIN, RESERVE_DIVISOR};

/// The least a worker gets, whatever the limit: room for the handshakes `pre_head_per_worker` always allows.
pub const PER_WORKER_MIN: u64 = PRE_HEAD_MIN as u64 * PRE_HEAD_COST;

/// Bytes one of `workers` workers' connections may hold under `limit` (None: no limit, no budget).
pub fn per_worker(limit: Option<u64>, workers: usize) -> Option<u64> {
    limit.map(|l| (l / RESERVE_DIVISOR / workers.max(1) as u64).max(PER_WORKER_MIN))
}

#[cfg(test)]
mod tests {
    use super::super::memory::{auto_budget, pre_head_per_worker, RESERVE_FIXED};
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn an_eighth_of_the_limit_over_the_workers() {
        assert_eq!(per_worker(Some(96 * MIB), 1), Some(12 * MIB));
        assert_eq!(per_worker(Some(128 * MIB), 2), Some(8 * MIB));
        assert_eq!(per_worker(Some(128 * MIB), 0), Some(16 * MIB), "zero workers counts as one");
        assert_eq!(per_worker(Some(16 * MIB), 8), Some(PER_WORKER_MIN), "a tiny limit keeps the floor");
        assert_eq!(per_worker(None, 2), None);
    }

    #[test]
    fn connections_and_content_together_stay_within_the_limit() {
        for limit in [64 * MIB, 96 * MIB, 128 * MIB, 256 * MIB, 1 << 30, 100_000_000] {
            for workers in [1, 2, 3, 8] {
                let conns = per_worker(Some(limit), workers).unwrap() * workers as u64;
                // Two content tables, the server's fixed reserve, every worker's connections.
                assert!(2 * auto_budget(limit) + RESERVE_FIXED + conns <= limit, "{limit} {workers}");
                // Connections waiting for their head fit inside the connections' share.
                let pre = pre_head_per_worker(Some(limit), workers) as u64 * PRE_HEAD_COST;
                assert!(pre <= per_worker(Some(limit), workers).unwrap(), "{limit} {workers}");
            }
        }
    }
}
