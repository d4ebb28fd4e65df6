//! What a content load makes of skew protection, the same in both modes: the single site's (control.rs, its
//! `--root`) and each entry of the many-sites mode (pool/registry.rs, `DIR/content/<id>/current`, which the puller
//! of a site with previews lays out as a Store beside production's `deploys.json`). Only when the site value sets
//! a window; the result goes into the table being loaded, so the list changes with the tree and the value.

use std::path::Path;
use std::sync::Arc;

use super::Previous;
use crate::log::{self, V};

/// The previous trees for a table loaded from `root` with a window of `window` seconds. A file that cannot be read
/// or is malformed leaves the site serving without skew protection (nothing else depends on it) and says why in
/// the log; the next load reads it again. `site` names the many-sites mode's entry in the log (None: the single
/// site).
pub fn previous_deploys(root: &Path, window: u64, why: &str, site: Option<&str>) -> Option<Arc<Previous>> {
    // Made once per load, never per request.
    let say = |level: fn(&str, &[(&str, V)]), msg: &str, more: Vec<(&'static str, V)>| {
        let mut fields = vec![("reason", V::S(why))];
        fields.extend(site.map(|s| ("site", V::S(s))));
        fields.extend(more);
        level(msg, &fields);
    };
    match super::load(root, window, super::now()) {
        Ok(Some(p)) => {
            say(
                log::info,
                "skew protection",
                vec![("window_s", V::U(window)), ("previous_trees", V::U(p.trees.len() as u64))],
            );
            Some(Arc::new(p))
        }
        // The many-sites mode's usual case (every preview, every pool site): said at each load of a single site
        // only, not at each load of each entry of a pool.
        Ok(None) if site.is_some() => None,
        Ok(None) => {
            say(
                log::info,
                "skew protection is on but the tree has no deploys list beside it (content not from Git): nothing to serve from",
                vec![],
            );
            None
        }
        Err(e) => {
            say(
                log::error,
                "deploys refused: the site serves without skew protection until a good file comes",
                vec![("error", V::S(&e))],
            );
            None
        }
    }
}
