//! A process-wide memo for the statistics' pure functions whose answers
//! repeat across metrics and reports (the Mann–Whitney null distribution of
//! given run counts, Student's t critical value of a given df). Keeping an
//! answer changes no number: it is the value the function returns for that
//! key, bit for bit.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, OnceLock, PoisonError};

/// Answers by key, at most `capacity` of them; when full it starts afresh,
/// which bounds memory and only costs recomputation.
#[derive(Debug)]
pub(crate) struct Memo<K, V> {
    map: OnceLock<Mutex<HashMap<K, V>>>,
    capacity: usize,
}

impl<K: Eq + Hash, V: Clone> Memo<K, V> {
    pub(crate) const fn new(capacity: usize) -> Self {
        Memo {
            map: OnceLock::new(),
            capacity,
        }
    }

    /// The kept answer for `key`, or `compute()`'s, kept. The lock is not
    /// held while computing: two threads may compute the same answer once
    /// each, never wait on each other's arithmetic. The key is looked up
    /// borrowed and copied only to keep a new answer.
    pub(crate) fn get_or_compute<Q>(&self, key: &Q, compute: impl FnOnce() -> V) -> V
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ToOwned<Owned = K> + ?Sized,
    {
        let map = self.map.get_or_init(Default::default);
        let lock = || map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = lock().get(key) {
            return v.clone();
        }
        let v = compute();
        let mut map = lock();
        if map.len() >= self.capacity {
            map.clear();
        }
        map.insert(key.to_owned(), v.clone());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computes_once_per_key_and_starts_afresh_when_full() {
        let memo: Memo<u32, u32> = Memo::new(2);
        let mut calls = 0;
        let mut get = |k: u32| {
            memo.get_or_compute(&k, || {
                calls += 1;
                k * 10
            })
        };
        assert_eq!((get(1), get(1), get(2)), (10, 10, 20));
        // full: 3 clears the memo, so 1 is computed again
        assert_eq!((get(3), get(1)), (30, 10));
        assert_eq!(calls, 4);
    }
}
