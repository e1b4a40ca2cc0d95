//! A bounded map that forgets its least recently used entry to make room: for caches an
//! attacker can fill (tokens, sources), which must keep what is in use and never be cleared
//! whole.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// At most `capacity` entries; a new one evicts the least recently used.
pub(crate) struct Lru<K, V> {
    capacity: usize,
    entries: HashMap<K, (V, u64)>,
    /// Last use → key, oldest first.
    order: BTreeMap<u64, K>,
    tick: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty map holding `capacity` entries at most (at least 1).
    pub(crate) fn new(capacity: usize) -> Self {
        Lru {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
        }
    }

    fn touch(&mut self, key: &K) -> u64 {
        self.tick += 1;
        let tick = self.tick;
        if let Some((_, used)) = self.entries.get_mut(key) {
            self.order.remove(used);
            *used = tick;
            self.order.insert(tick, key.clone());
        }
        tick
    }

    /// The entry of `key`, now the most recently used.
    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        if !self.entries.contains_key(key) {
            return None;
        }
        self.touch(key);
        self.entries.get_mut(key).map(|(value, _)| value)
    }

    /// Sets `key` to `value`, the most recently used; evicts the least recently used entry
    /// when full.
    pub(crate) fn insert(&mut self, key: K, value: V) {
        if let Some((old, _)) = self.entries.get_mut(&key) {
            *old = value;
            self.touch(&key);
            return;
        }
        if self.entries.len() >= self.capacity
            && let Some((_, oldest)) = self.order.pop_first()
        {
            self.entries.remove(&oldest);
        }
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.entries.insert(key, (value, self.tick));
    }

    /// Forgets `key`.
    pub(crate) fn remove(&mut self, key: &K) {
        if let Some((_, used)) = self.entries.remove(key) {
            self.order.remove(&used);
        }
    }

    /// How many entries it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_goes_and_hot_entries_stay() {
        let mut lru = Lru::new(3);
        lru.insert("hot", 0);
        for i in 0..1000 {
            // A hot entry used between every two new ones is never evicted.
            *lru.get_mut(&"hot").unwrap() += 1;
            lru.insert(Box::leak(format!("cold-{i}").into_boxed_str()) as &str, i);
            assert!(lru.len() <= 3);
        }
        assert_eq!(lru.get_mut(&"hot").copied(), Some(1000));
        assert_eq!(lru.get_mut(&"cold-999").copied(), Some(999));
        assert_eq!(lru.get_mut(&"cold-997"), None);
        lru.remove(&"hot");
        assert_eq!(lru.len(), 2);
        lru.insert("again", 1);
        lru.insert("more", 2);
        assert_eq!(lru.len(), 3);
    }
}
