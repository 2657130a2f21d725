//! A stable counting sort by small integer keys, shared by the broad phase (pairs by their
//! first box), the assembly (entries by column) and the block factor's set-up (coupled
//! bodies by body).

/// A stable counting sort of entries by their keys `keys` (each < n): where each key's
/// entries start (and, last, the count), and the entries' indices key by key, each key's
/// in the order given.
pub(crate) fn by_key(n: usize, keys: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut start = vec![0usize; n + 1];
    for &c in keys {
        start[c + 1] += 1;
    }
    for c in 0..n {
        start[c + 1] += start[c];
    }
    let mut fill = start.clone();
    let mut order = vec![0usize; keys.len()];
    for (k, &c) in keys.iter().enumerate() {
        order[fill[c]] = k;
        fill[c] += 1;
    }
    (start, order)
}

#[cfg(test)]
mod tests {
    use super::by_key;

    /// Entries grouped by key, in the given order within a key; empty keys take no room.
    #[test]
    fn groups_by_key_and_keeps_the_order_within_a_key() {
        let keys = [2, 0, 2, 3, 0, 2];
        let (start, order) = by_key(5, &keys);
        assert_eq!(start, vec![0, 2, 2, 5, 6, 6]);
        assert_eq!(order, vec![1, 4, 0, 2, 5, 3]);
    }
}
