"""The flag policy: labels never exclude, everything else (including unknown flags) does."""

from bench.integrity.flags import EXCLUDING_FLAGS, LABEL_FLAGS, excluding, is_excluding, merge_flags


def test_labels_do_not_exclude() -> None:
    assert LABEL_FLAGS == {"no_pallas", "mostly_xla", "sandbox:none"}  # mostly_xla: Pallas coverage below 0.5
    assert not any(is_excluding(f) for f in LABEL_FLAGS)


def test_known_and_unknown_flags_exclude() -> None:
    for flag in EXCLUDING_FLAGS | {"static:something_new", "a_future_check"}:
        assert is_excluding(flag)
    assert not LABEL_FLAGS & EXCLUDING_FLAGS


def test_excluding_and_merge() -> None:
    assert excluding(["no_pallas", "host_callback", "sandbox:none"]) == ["host_callback"]
    assert merge_flags(["b", "a"], ["a", "c"]) == ["a", "b", "c"]
