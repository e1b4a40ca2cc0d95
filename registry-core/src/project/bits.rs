//! Sets of a snapshot's slots as bits: what a projection is computed with.
//!
//! A snapshot compiles, once, which tools each scope and tenant admits; projecting it onto
//! a subject is then a few passes over words of 64 slots, and the visible slots come out in
//! slot order, which is name order.

use std::sync::atomic::{AtomicU64, Ordering};

/// A set of small integers (slots, or the ids of scopes), one bit each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bits {
    words: Box<[u64]>,
}

impl Bits {
    /// The empty set over `slots` slots.
    pub(crate) fn new(slots: usize) -> Bits {
        Bits {
            words: vec![0; slots.div_ceil(64)].into_boxed_slice(),
        }
    }

    pub(crate) fn insert(&mut self, slot: usize) {
        self.words[slot / 64] |= 1 << (slot % 64);
    }

    pub(crate) fn contains(&self, slot: usize) -> bool {
        self.words[slot / 64] & (1 << (slot % 64)) != 0
    }

    /// Whether the set has no slot.
    pub(crate) fn is_empty(&self) -> bool {
        self.words.iter().all(|&word| word == 0)
    }

    /// How many slots the set holds.
    pub(crate) fn len(&self) -> usize {
        self.words
            .iter()
            .map(|word| word.count_ones() as usize)
            .sum()
    }

    /// Adds every slot of `members`.
    pub(crate) fn union(&mut self, members: &Members) {
        match members {
            Members::Dense(other) => {
                for (word, other) in self.words.iter_mut().zip(&other.words) {
                    *word |= other;
                }
            }
            Members::Sparse(slots) => {
                for &slot in slots.iter() {
                    self.insert(slot);
                }
            }
        }
    }

    /// Keeps only the slots of `other`.
    pub(crate) fn intersect(&mut self, other: &Bits) {
        for (word, other) in self.words.iter_mut().zip(&other.words) {
            *word &= other;
        }
    }

    /// Keeps only the slots that are not in `restricted`, or are in `admitted` too (which
    /// holds only slots of `restricted`).
    pub(crate) fn restrict(&mut self, restricted: &Bits, admitted: Option<&Members>) {
        match admitted {
            None => {
                for (word, restricted) in self.words.iter_mut().zip(&restricted.words) {
                    *word &= !restricted;
                }
            }
            Some(Members::Dense(admitted)) => {
                let pairs = restricted.words.iter().zip(&admitted.words);
                for (word, (restricted, admitted)) in self.words.iter_mut().zip(pairs) {
                    *word &= !restricted | admitted;
                }
            }
            Some(Members::Sparse(admitted)) => {
                // At most as many slots as the tenant admits were in the set and stay.
                let kept: Vec<usize> = admitted
                    .iter()
                    .copied()
                    .filter(|&slot| self.contains(slot))
                    .collect();
                self.restrict(restricted, None);
                for slot in kept {
                    self.insert(slot);
                }
            }
        }
    }

    /// The slots, in increasing order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(index, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(index * 64 + bit)
            })
        })
    }
}

/// A set of slots that changes while runs are opened (which are revoked, which are not
/// ready): bits set and cleared atomically, one word of 64 slots at a time.
#[derive(Debug)]
pub(crate) struct AtomicBits {
    words: Box<[AtomicU64]>,
}

impl AtomicBits {
    /// The empty set over `slots` slots.
    pub(crate) fn new(slots: usize) -> AtomicBits {
        AtomicBits {
            words: (0..slots.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Puts `slot` in the set (`on`) or takes it out.
    pub(crate) fn set(&self, slot: usize, on: bool) {
        let bit = 1 << (slot % 64);
        if on {
            self.words[slot / 64].fetch_or(bit, Ordering::AcqRel);
        } else {
            self.words[slot / 64].fetch_and(!bit, Ordering::AcqRel);
        }
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, slot: usize) -> bool {
        self.words[slot / 64].load(Ordering::Acquire) & (1 << (slot % 64)) != 0
    }
}

impl Bits {
    /// Takes out every slot that is in `other` now.
    pub(crate) fn remove_all(&mut self, other: &AtomicBits) {
        for (word, other) in self.words.iter_mut().zip(&other.words) {
            *word &= !other.load(Ordering::Acquire);
        }
    }
}

/// The slots a scope or a tenant admits: as bits when that is smaller than a list of them
/// (many slots), else as a sorted list, so that a snapshot with many scopes of a few tools
/// each takes no more room than the lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Members {
    Dense(Bits),
    Sparse(Box<[usize]>),
}

impl Members {
    /// The members of `slots` (sorted), over a snapshot of `len` slots.
    pub(crate) fn of(slots: Vec<usize>, len: usize) -> Members {
        // A list costs 8 bytes a slot, bits 8 bytes a word of 64 slots.
        if slots.len() >= len.div_ceil(64) {
            let mut set = Bits::new(len);
            for slot in slots {
                set.insert(slot);
            }
            Members::Dense(set)
        } else {
            Members::Sparse(slots.into_boxed_slice())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{AtomicBits, Bits, Members};

    #[test]
    fn atomic_bits_are_set_cleared_and_removed_across_words() {
        let marks = AtomicBits::new(200);
        for slot in [0, 63, 64, 130, 199] {
            marks.set(slot, true);
        }
        marks.set(63, false);
        marks.set(5, false);
        assert!(marks.contains(0) && marks.contains(64) && marks.contains(199));
        assert!(!marks.contains(63) && !marks.contains(5));
        let mut visible = set(200, &[0, 1, 63, 64, 65, 130, 198, 199]);
        visible.remove_all(&marks);
        assert_eq!(visible.iter().collect::<Vec<_>>(), [1, 63, 65, 198]);
    }

    fn set(len: usize, slots: &[usize]) -> Bits {
        let mut set = Bits::new(len);
        slots.iter().for_each(|&slot| set.insert(slot));
        set
    }

    #[test]
    fn a_set_gives_back_its_slots_in_order_across_words() {
        let slots = [0, 1, 63, 64, 127, 128, 199];
        let set = set(200, &slots);
        assert_eq!(set.iter().collect::<Vec<_>>(), slots);
        assert_eq!(set.len(), slots.len());
        assert!(!set.is_empty() && Bits::new(200).is_empty());
        assert!(set.contains(64) && !set.contains(65));
    }

    #[test]
    fn members_are_bits_only_when_that_is_smaller() {
        // 1,000 slots: 16 words, so a list of 16 or more is kept as bits.
        assert!(matches!(
            Members::of((0..15).collect(), 1_000),
            Members::Sparse(_)
        ));
        assert!(matches!(
            Members::of((0..16).collect(), 1_000),
            Members::Dense(_)
        ));
    }

    #[test]
    fn union_and_restriction_agree_between_dense_and_sparse_members() {
        let len = 300;
        let admitted: Vec<usize> = vec![3, 70, 140, 299];
        let restricted = set(len, &[3, 5, 70, 71, 140, 150, 299]);
        let start = set(len, &[1, 3, 5, 70, 140, 200, 299]);
        let dense = Members::Dense(set(len, &[3, 70, 140, 299]));
        let sparse = Members::Sparse(admitted.clone().into_boxed_slice());
        for members in [&dense, &sparse] {
            let mut visible = start.clone();
            visible.restrict(&restricted, Some(members));
            assert_eq!(
                visible.iter().collect::<Vec<_>>(),
                [1, 3, 70, 140, 200, 299]
            );
            let mut union = Bits::new(len);
            union.union(members);
            assert_eq!(union.iter().collect::<Vec<_>>(), admitted);
        }
        let mut none = start.clone();
        none.restrict(&restricted, None);
        assert_eq!(none.iter().collect::<Vec<_>>(), [1, 200]);
        let mut only = start;
        only.intersect(&set(len, &[1, 2, 299]));
        assert_eq!(only.iter().collect::<Vec<_>>(), [1, 299]);
    }
}
