"""The accuracy check's window read from the lake."""

from __future__ import annotations

import pytest

from profile_store.audiences.window_inputs import window_inputs


def test_a_window_of_no_day_is_refused_naming_the_problem():
    with pytest.raises(ValueError, match="at least one day"):
        window_inputs(None, None, [])  # type: ignore[arg-type]
