//! Compiling the site value's rules and the site's `_redirects` into a content table (rules/mod.rs says what).

use super::{parse_file, ErrorPage, Piece, Rule, Site, MAX_RULES, REDIRECTS_FILE};
use crate::site::content::{Table, Target};

/// Compiles the site value's rules (`redirects`, `error_pages`) and the site's `_redirects` (read from `file`, when
/// the site has one) into `t.rules`, and resolves the error pages. Errors: a bad rule (with its file and line), a
/// rewrite to a file the site does not have. Missing error-page files are reported in `errors` like
/// `--not-found-page` (the page is left out), and their indexes returned (a site value file naming one is refused).
/// `file`: the text of the site's `_redirects`, if it has one.
pub fn install(
    t: &mut Table,
    redirects: &[Rule],
    error_pages: &[ErrorPage],
    file: Option<&str>,
    errors: &mut Vec<String>,
) -> Result<Vec<usize>, String> {
    let mut rules = redirects.to_vec();
    if let Some(text) = file {
        rules.extend(parse_file(text, &REDIRECTS_FILE[1..])?);
    }
    if rules.len() > MAX_RULES {
        return Err(format!("{} redirect rules: at most {MAX_RULES}", rules.len()));
    }
    let mut site = Site { moved: std::mem::take(&mut t.rules.moved), ..Site::default() };
    for (i, r) in rules.iter().enumerate() {
        if r.is_rewrite() {
            if let [Piece::Lit(p)] = &r.to[..] {
                if !matches!(t.lookup(p), Some(Target::File(_))) {
                    return Err(format!(
                        "{}: {}: rewrite target {} is not a file in the site",
                        r.origin,
                        r.text,
                        String::from_utf8_lossy(p)
                    ));
                }
            }
        }
        if r.force {
            site.forced.insert(i as u32, &r.from);
        }
        site.all.insert(i as u32, &r.from);
    }
    site.rules = rules;
    let mut missing = Vec::new();
    for (k, e) in error_pages.iter().enumerate() {
        match t.lookup(e.path.as_bytes()) {
            Some(Target::File(i)) => site.error_pages.push((e.status, e.prefix.as_bytes().into(), i)),
            _ => {
                errors.push(format!("--error-page {}: {}: no such file in the site", e.status, e.path));
                missing.push(k);
            }
        }
    }
    site.error_pages.sort_by_key(|(_, p, _)| std::cmp::Reverse(p.len()));
    t.rules = site;
    Ok(missing)
}
