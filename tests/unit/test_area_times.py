"""The per-area time table the suite prints at its end (``tests/helpers/area_times.py``)."""

from __future__ import annotations

from helpers.area_times import area_of, table


def test_a_test_belongs_to_its_folder_under_tests() -> None:
    assert area_of("tests/unit/test_x.py::test_y[a]") == "unit"
    assert area_of("tests/e2e/cpu_compat/test_z.py::t") == "e2e"
    assert area_of("tests/test_types.py::test_mypy") == "test_types.py"


def test_the_table_is_longest_first_with_counts_shares_and_a_total() -> None:
    lines = table({"unit": 10.0, "e2e": 30.0}, {"unit": {"a", "b"}, "e2e": {"c"}})
    assert lines[1].split() == ["e2e", "1", "30.0", "75.0%"]
    assert lines[2].split() == ["unit", "2", "10.0", "25.0%"]
    assert lines[3].split() == ["total", "3", "40.0"]
