//! Answers a request a redirect rule matched, as a response description (answer/reply.rs): a redirect
//! (Location from the rule, query kept) or a rewrite (another file of the site served under the request's URL,
//! with the status of a normal file response).

use crate::answer::file::{self, FileAsk};
use crate::answer::reply::{Location, Reply};
use crate::rules::{self, Captures, Rule};
use crate::site::content::{Table, Target};

/// None: a rewrite whose target is not in the site (the request goes on as if no rule matched). `scratch`
/// holds a rewrite's target path while it is looked up.
pub fn apply<'a>(
    table: &'a Table,
    file_ask: &FileAsk<'a>,
    query: Option<&'a [u8]>,
    rule: &'a Rule,
    path: &'a [u8],
    caps: &Captures,
    scratch: &mut [u8],
) -> Option<Reply<'a>> {
    if rule.is_rewrite() {
        let p = rules::rewrite_path(rule, path, caps, scratch)?;
        let i = match table.lookup(p)? {
            Target::File(i) => i,
            Target::Moved(k) => table.rules.moved[k as usize].1,
            Target::Redirect => return None,
        };
        return Some(file::reply(table, file_ask, table.entry(i)));
    }
    Some(Reply::redirect(rule.status, Location::Rule { rule, path, caps: *caps, query }))
}
