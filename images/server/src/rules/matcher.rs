//! The compiled form of the redirect rules: a trie over path segments. Each node has a hash map of literal
//! children, one placeholder child and the rules that end there (`end`) or take the rest of the path (`splat`).
//! Finding the rule for a path walks the path's segments once, one hash lookup per segment, and visits the
//! placeholder branch only where one exists: the cost follows the path's length (and how many rules share a
//! prefix with placeholders), not the number of rules, so 1,000 rules cost what 10 do. Each node keeps the
//! lowest rule index in its subtree, so a subtree that cannot beat the best match found so far is skipped:
//! "first match wins" without scanning.

use super::parse::{Seg, MAX_PARAMS};
use crate::fxhash::FxMap;

#[derive(Default, Clone, Debug)]
struct Node {
    lit: FxMap<Box<[u8]>, u32>,
    param: Option<u32>,
    /// The first rule whose pattern ends here.
    end: Option<u32>,
    /// The first rule whose pattern ends here with `*`.
    splat: Option<u32>,
    /// The lowest rule index anywhere below (pruning).
    min: u32,
}

/// Byte ranges of the matched path: placeholders by slot, and the splat.
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub struct Captures {
    pub params: [(u32, u32); MAX_PARAMS],
    pub splat: (u32, u32),
}

#[derive(Default, Clone, Debug)]
pub struct Matcher {
    nodes: Vec<Node>,
}

impl Matcher {
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Adds rule `index`; rules must be inserted in increasing index order (the first one wins a tie).
    pub fn insert(&mut self, index: u32, from: &[Seg]) {
        if self.nodes.is_empty() {
            self.nodes.push(Node { min: u32::MAX, ..Node::default() });
        }
        let mut n = 0usize;
        self.nodes[0].min = self.nodes[0].min.min(index);
        for seg in from {
            let next = match seg {
                Seg::Splat => {
                    self.nodes[n].splat.get_or_insert(index);
                    return;
                }
                Seg::Lit(l) => self.nodes[n].lit.get(l).copied(),
                Seg::Param(_) => self.nodes[n].param,
            };
            let next = match next {
                Some(c) => c as usize,
                None => {
                    let c = self.nodes.len();
                    self.nodes.push(Node { min: u32::MAX, ..Node::default() });
                    match seg {
                        Seg::Lit(l) => {
                            self.nodes[n].lit.insert(l.clone(), c as u32);
                        }
                        _ => self.nodes[n].param = Some(c as u32),
                    }
                    c
                }
            };
            n = next;
            self.nodes[n].min = self.nodes[n].min.min(index);
        }
        self.nodes[n].end.get_or_insert(index);
    }

    /// The first rule matching `path` (normalised, starting with `/`; a trailing slash is ignored), with its
    /// captures. Allocation-free.
    pub fn find(&self, path: &[u8], caps: &mut Captures) -> Option<u32> {
        if self.nodes.is_empty() {
            return None;
        }
        let mut best = None;
        let mut cur = Captures::default();
        self.walk(0, path, 1.min(path.len()), 0, &mut cur, &mut best, caps);
        best
    }

    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        n: usize,
        path: &[u8],
        pos: usize,
        params: usize,
        cur: &mut Captures,
        best: &mut Option<u32>,
        best_caps: &mut Captures,
    ) {
        let node = &self.nodes[n];
        if best.is_some_and(|b| node.min >= b) {
            return;
        }
        let mut offer = |rule: Option<u32>, cur: &Captures, best: &mut Option<u32>| {
            if let Some(r) = rule {
                if best.is_none_or(|b| r < b) {
                    *best = Some(r);
                    *best_caps = *cur;
                }
            }
        };
        if node.splat.is_some() {
            cur.splat = (pos as u32, path.len() as u32);
            offer(node.splat, cur, best);
        }
        if pos >= path.len() {
            offer(node.end, cur, best);
            return;
        }
        let end = path[pos..].iter().position(|&b| b == b'/').map_or(path.len(), |i| pos + i);
        let next = (end + 1).min(path.len());
        if let Some(&c) = node.lit.get(&path[pos..end]) {
            self.walk(c as usize, path, next, params, cur, best, best_caps);
        }
        if let (Some(c), true) = (node.param, params < MAX_PARAMS) {
            cur.params[params] = (pos as u32, end as u32);
            self.walk(c as usize, path, next, params + 1, cur, best, best_caps);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_rule;
    use super::*;

    fn matcher(rules: &[&str]) -> Matcher {
        let mut m = Matcher::default();
        for (i, r) in rules.iter().enumerate() {
            m.insert(i as u32, &parse_rule(r, "t").unwrap().unwrap().from);
        }
        m
    }

    fn find(m: &Matcher, p: &str) -> Option<(u32, Captures)> {
        let mut c = Captures::default();
        m.find(p.as_bytes(), &mut c).map(|r| (r, c))
    }

    #[test]
    fn exact_splat_and_placeholders() {
        let m = matcher(&["/old /new", "/blog/* /news/:splat", "/:year/:slug /p/:year/:slug", "/ /home"]);
        assert_eq!(find(&m, "/old").unwrap().0, 0);
        assert_eq!(find(&m, "/old/").unwrap().0, 0, "a trailing slash is ignored");
        let (r, c) = find(&m, "/blog/2024/post").unwrap();
        assert_eq!((r, c.splat), (1, (6, 15)));
        assert_eq!(find(&m, "/blog").unwrap().0, 1, "the splat may be empty");
        let (r, c) = find(&m, "/2024/hello").unwrap();
        assert_eq!((r, c.params[0], c.params[1]), (2, (1, 5), (6, 11)));
        assert_eq!(find(&m, "/").unwrap().0, 3);
        assert_eq!(find(&m, "/a/b/c"), None);
        assert_eq!(find(&m, "/x"), None);
    }

    #[test]
    fn the_first_rule_wins_whatever_its_shape() {
        let m = matcher(&["/:a/:b /x", "/blog/* /y", "/blog/post /z"]);
        assert_eq!(find(&m, "/blog/post").unwrap().0, 0);
        let m = matcher(&["/blog/* /y", "/:a/:b /x", "/blog/post /z"]);
        assert_eq!(find(&m, "/blog/post").unwrap().0, 0);
        let m = matcher(&["/blog/post /z", "/blog/* /y"]);
        assert_eq!(find(&m, "/blog/post").unwrap().0, 0);
        assert_eq!(find(&m, "/blog/other").unwrap().0, 1);
        let m = matcher(&["/a /1", "/a /2"]);
        assert_eq!(find(&m, "/a").unwrap().0, 0);
    }

    #[test]
    fn a_thousand_rules() {
        let texts: Vec<String> = (0..1000).map(|i| format!("/old/{i} /new/{i}")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let m = matcher(&refs);
        assert_eq!(find(&m, "/old/999").unwrap().0, 999);
        assert_eq!(find(&m, "/old/1000"), None);
    }
}
