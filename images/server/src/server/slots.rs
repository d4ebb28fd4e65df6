//! Lists of connections threaded through their slots, oldest first: each slot carries its own `Links` per list,
//! so joining at the newest end, leaving from anywhere and finding the oldest are O(1) and never allocate. The
//! worker keeps two: connections waiting for their request head (conn.rs, `PreHead`) and idle ones, the first to
//! go when connection memory runs out (budget.rs).

const NIL: u32 = u32::MAX;

/// A slot's place in one list: whether it is in it, and its neighbours there (NIL at the ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Links {
    pub(super) on: bool,
    prev: u32,
    next: u32,
}

impl Links {
    pub(super) const NONE: Links = Links { on: false, prev: NIL, next: NIL };
}

/// One list: its ends and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SlotList {
    oldest: u32,
    newest: u32,
    pub(super) count: usize,
}

impl SlotList {
    pub(super) const EMPTY: SlotList = SlotList { oldest: NIL, newest: NIL, count: 0 };

    /// The member that joined first (None: the list is empty).
    pub(super) fn oldest(&self) -> Option<usize> {
        (self.oldest != NIL).then_some(self.oldest as usize)
    }

    /// Appends slot `idx`, which must not be in the list, as its newest member.
    pub(super) fn push_newest<T>(&mut self, slots: &mut [T], idx: usize, links: fn(&mut T) -> &mut Links) {
        let newest = self.newest;
        *links(&mut slots[idx]) = Links { on: true, prev: newest, next: NIL };
        match newest {
            NIL => self.oldest = idx as u32,
            n => links(&mut slots[n as usize]).next = idx as u32,
        }
        self.newest = idx as u32;
        self.count += 1;
    }

    /// Takes slot `idx` out of the list (nothing when it is not in it).
    pub(super) fn unlink<T>(&mut self, slots: &mut [T], idx: usize, links: fn(&mut T) -> &mut Links) {
        let l = *links(&mut slots[idx]);
        if !l.on {
            return;
        }
        *links(&mut slots[idx]) = Links::NONE;
        match l.prev {
            NIL => self.oldest = l.next,
            p => links(&mut slots[p as usize]).next = l.next,
        }
        match l.next {
            NIL => self.newest = l.prev,
            n => links(&mut slots[n as usize]).prev = l.prev,
        }
        self.count -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me(l: &mut Links) -> &mut Links {
        l
    }

    /// The members oldest first, walking the links (and checking them both ways).
    fn members(list: &SlotList, slots: &[Links]) -> Vec<usize> {
        let mut out = Vec::new();
        let (mut at, mut prev) = (list.oldest, NIL);
        while at != NIL {
            let l = slots[at as usize];
            assert!(l.on && l.prev == prev, "slot {at}: {l:?}");
            out.push(at as usize);
            (prev, at) = (at, l.next);
        }
        assert_eq!(list.newest, prev);
        assert_eq!(out.len(), list.count);
        out
    }

    #[test]
    fn oldest_first_with_leaving_from_anywhere() {
        let mut slots = vec![Links::NONE; 6];
        let mut list = SlotList::EMPTY;
        assert_eq!(list.oldest(), None);
        for i in [3, 0, 5, 1] {
            list.push_newest(&mut slots, i, me);
        }
        assert_eq!(members(&list, &slots), vec![3, 0, 5, 1]);
        list.unlink(&mut slots, 5, me); // the middle
        list.unlink(&mut slots, 3, me); // the oldest
        list.unlink(&mut slots, 2, me); // not a member: nothing
        assert_eq!(members(&list, &slots), vec![0, 1]);
        assert_eq!(list.oldest(), Some(0));
        list.push_newest(&mut slots, 3, me); // back in, now the newest
        list.unlink(&mut slots, 1, me);
        assert_eq!(members(&list, &slots), vec![0, 3]);
        list.unlink(&mut slots, 0, me);
        list.unlink(&mut slots, 3, me);
        assert_eq!((list, slots.iter().all(|l| *l == Links::NONE)), (SlotList::EMPTY, true));
    }
}
