//! What the admin port shows of a pool: `GET /sites` (JSON, one entry per site sorted by id; `?top=N` the N
//! busiest by requests) and the Prometheus families `hyperstatic_pool_sites{state}` and
//! `hyperstatic_pool_site_requests_total{site}` — the latter for the 10 busiest sites only, so a pool of
//! thousands of sites never makes thousands of series. The registry rebuilds the `Report` after its changes
//! (at most every 100 ms, pool/watch.rs); the counters are read live from each site's cell.

use std::fmt::Write;
use std::sync::Arc;

use super::{Cell, State};

/// The sites in the Prometheus per-site family.
pub const TOP_SERIES: usize = 10;

pub struct SiteReport {
    pub cell: Arc<Cell>,
    pub state: State,
    /// The revision of the index entry in effect (index.rs): its hosts are in the published host map.
    pub entry_revision: String,
    pub value_revision: String,
    pub content_revision: Option<String>,
    pub files: usize,
    pub memory_bytes: u64,
    /// Loads made since the site entered the index (quick, full, and a quick reload leaving memory): a site
    /// answered from disk without a reload leaves it unchanged.
    pub loads: u64,
    pub error: Option<String>,
}

#[derive(Default)]
pub struct Report {
    /// Sorted by id. Shared with the registry's entries, each rebuilt only when its site changes: a report of
    /// 10,000 sites costs a pointer per site, not a copy of each site's strings.
    pub sites: Vec<Arc<SiteReport>>,
    /// The index's problems (refused shards, refused sites).
    pub problems: Vec<String>,
}

fn json_str(out: &mut String, s: &str) {
    out.push_str(&serde_json::Value::String(s.to_string()).to_string());
}

/// The value of `top=` in a query string, if any.
pub fn top_of(query: Option<&[u8]>) -> Option<usize> {
    let q = std::str::from_utf8(query?).ok()?;
    q.split('&').find_map(|kv| kv.strip_prefix("top=")).and_then(|n| n.parse().ok())
}

impl Report {
    /// `GET /sites`: `{"sites": [...], "problems": [...]}`; with `top`, the `top` busiest sites, busiest first.
    pub fn sites_json(&self, top: Option<usize>) -> String {
        let mut list: Vec<(&SiteReport, super::counters::Totals)> =
            self.sites.iter().map(|s| (&**s, s.cell.counters.totals())).collect();
        if let Some(n) = top {
            list.sort_by(|a, b| b.1.requests().cmp(&a.1.requests()).then(a.0.cell.id.cmp(&b.0.cell.id)));
            list.truncate(n);
        }
        let mut out = String::with_capacity(256 * list.len() + 64);
        out.push_str("{\"sites\":[");
        for (i, (s, t)) in list.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("\n{\"id\":");
            json_str(&mut out, &s.cell.id);
            let _ = write!(out, ",\"state\":\"{}\",\"entryRevision\":", s.state.name());
            json_str(&mut out, &s.entry_revision);
            out.push_str(",\"valueRevision\":");
            json_str(&mut out, &s.value_revision);
            out.push_str(",\"contentRevision\":");
            match &s.content_revision {
                Some(r) => json_str(&mut out, r),
                None => out.push_str("null"),
            }
            let _ = write!(
                out,
                ",\"files\":{},\"memoryBytes\":{},\"loads\":{},\"requests\":{},\"requestsByClass\":{{\"1xx\":{},\"2xx\":{},\"3xx\":{},\"4xx\":{},\"5xx\":{}}},\"bytesSent\":{},\"rateLimited\":{},\"error\":",
                s.files,
                s.memory_bytes,
                s.loads,
                t.requests(),
                t.classes[0],
                t.classes[1],
                t.classes[2],
                t.classes[3],
                t.classes[4],
                t.bytes,
                t.rate_limited
            );
            match &s.error {
                Some(e) => json_str(&mut out, e),
                None => out.push_str("null"),
            }
            out.push('}');
        }
        out.push_str("\n],\"problems\":[");
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json_str(&mut out, p);
        }
        out.push_str("]}\n");
        out
    }

    /// The pool's Prometheus families.
    pub fn metrics(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP hyperstatic_pool_sites Sites of the pool's index, by state.\n# TYPE hyperstatic_pool_sites gauge"
        );
        for st in State::ALL {
            let n = self.sites.iter().filter(|s| s.state == st).count();
            let _ = writeln!(out, "hyperstatic_pool_sites{{state=\"{}\"}} {n}", st.name());
        }
        let _ = writeln!(
            out,
            "# HELP hyperstatic_pool_site_requests_total Responses of the {TOP_SERIES} busiest sites (the others are in /sites).\n# TYPE hyperstatic_pool_site_requests_total counter"
        );
        let mut busy: Vec<(u64, &str)> = self
            .sites
            .iter()
            .map(|s| (s.cell.counters.totals().requests(), &*s.cell.id))
            .filter(|(n, _)| *n > 0)
            .collect();
        busy.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        for (n, id) in busy.into_iter().take(TOP_SERIES) {
            let _ = writeln!(out, "hyperstatic_pool_site_requests_total{{site=\"{id}\"}} {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::counters::SiteCounters;

    fn site(id: &str, requests: u64) -> Arc<SiteReport> {
        let cell = Arc::new(Cell { id: id.into(), counters: SiteCounters::new(1), want: Default::default() });
        for _ in 0..requests {
            cell.counters.count(0, 200, 1);
        }
        Arc::new(SiteReport {
            cell,
            state: State::Memory,
            entry_revision: "sha256:1".into(),
            value_revision: "sha256:0".into(),
            content_revision: None,
            files: 1,
            memory_bytes: 2,
            loads: 1,
            error: None,
        })
    }

    #[test]
    fn sites_json_parses_sorted_and_top_n_is_the_busiest() {
        let r = Report { sites: vec![site("a.a", 1), site("b.b", 5), site("c.c", 3)], problems: vec!["p".into()] };
        let v: serde_json::Value = serde_json::from_str(&r.sites_json(None)).unwrap();
        let ids: Vec<&str> = v["sites"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["a.a", "b.b", "c.c"]);
        assert_eq!(v["sites"][1]["requests"], 5);
        assert_eq!(v["sites"][1]["requestsByClass"]["2xx"], 5);
        let v: serde_json::Value = serde_json::from_str(&r.sites_json(Some(2))).unwrap();
        let ids: Vec<&str> = v["sites"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["b.b", "c.c"]);
        assert_eq!(top_of(Some(b"x=1&top=3")), Some(3));
        let mut m = String::new();
        r.metrics(&mut m);
        assert!(m.contains("hyperstatic_pool_sites{state=\"memory\"} 3"));
        assert!(m.contains("hyperstatic_pool_site_requests_total{site=\"b.b\"} 5"));
    }

    #[test]
    fn only_the_ten_busiest_sites_get_a_series() {
        let r = Report { sites: (1..=15).map(|i| site(&format!("s.n{i}"), i)).collect(), problems: vec![] };
        let mut m = String::new();
        r.metrics(&mut m);
        assert_eq!(m.matches("hyperstatic_pool_site_requests_total{").count(), TOP_SERIES);
        assert!(m.contains("site=\"s.n15\"") && !m.contains("site=\"s.n5\""));
    }
}
