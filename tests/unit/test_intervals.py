import numpy as np

from idlehound.analysis import _intervals as iv


def s(*pairs):
    return np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.int64)


def pairs(a):
    return list(zip(a[0].tolist(), a[1].tolist()))


def test_union_merges_overlaps_and_touching_and_drops_empty():
    a = iv.union(np.array([5, 0, 10, 20, 30]), np.array([12, 6, 11, 25, 30]))
    assert pairs(a) == [(0, 12), (20, 25)]
    assert iv.total(a) == 17


def test_intersect_and_subtract_exact():
    a = s((0, 10), (20, 30))
    b = s((5, 25))
    assert pairs(iv.intersect(a, b)) == [(5, 10), (20, 25)]
    assert pairs(iv.subtract(a, b)) == [(0, 5), (25, 30)]
    assert pairs(iv.subtract(b, a)) == [(10, 20)]


def test_measure_in_windows_including_partial_and_overlapping_windows():
    a = s((0, 10), (20, 30))
    got = iv.measure_in(a, np.array([0, 5, 15, 25, -5]), np.array([30, 22, 18, 100, 0]))
    assert got.tolist() == [20, 7, 0, 5, 0]


def test_measure_in_empty_set():
    assert iv.measure_in(iv.EMPTY, np.array([0]), np.array([10])).tolist() == [0]


def test_split_at_cuts_only_inside_intervals():
    a = s((0, 10), (20, 30))
    assert pairs(iv.split_at(a, np.array([5, 15, 20, 25]))) == [(0, 5), (5, 10), (20, 25), (25, 30)]


def test_owner_finds_the_window_holding_each_point():
    st, en = np.array([0, 10, 20]), np.array([10, 20, 25])
    assert iv.owner(np.array([-1, 0, 9, 10, 24, 25]), st, en).tolist() == [-1, 0, 0, 1, 2, -1]


def test_union_matches_brute_force_on_random_input():
    rng = np.random.default_rng(1)
    for _ in range(50):
        starts = rng.integers(0, 200, 30)
        ends = starts + rng.integers(0, 20, 30)
        covered = np.zeros(260, bool)
        for a, b in zip(starts, ends):
            covered[a:b] = True
        assert iv.total(iv.union(starts, ends)) == int(covered.sum())
        other = iv.union(rng.integers(0, 200, 10), rng.integers(0, 200, 10) + 30)
        mask_b = np.zeros(260, bool)
        for a, b in pairs(other):
            mask_b[a:b] = True
        assert iv.total(iv.intersect(iv.union(starts, ends), other)) == int((covered & mask_b).sum())
        assert iv.total(iv.subtract(iv.union(starts, ends), other)) == int((covered & ~mask_b).sum())
