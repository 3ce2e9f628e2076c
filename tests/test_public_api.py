import memlane


def test_all_is_sorted_and_complete():
    assert memlane.__all__ == sorted(memlane.__all__)
    for name in memlane.__all__:
        assert hasattr(memlane, name), name
    public = {n for n in vars(memlane) if not n.startswith("_") and n[0].isupper()}
    assert public <= set(memlane.__all__)
