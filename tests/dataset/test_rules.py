"""The rules the SQL takes from Python are stated once, in Python, and the SQL agrees with them."""

from __future__ import annotations

from bench.dataset import schema
from bench.dataset.metrics import Metrics
from bench.harness.protocol.messages import MOSTLY_XLA_BELOW
from bench.harness.protocol.result import Status


def test_every_status_has_an_outcome_and_the_sql_uses_the_python_mapping(tmp_path) -> None:
    assert set(schema.OUTCOME_OF_STATUS) == {s.value for s in Status}
    assert set(schema.OUTCOME_OF_STATUS.values()) - {None} == set(schema.MEASURED_OUTCOMES)
    con = Metrics(tmp_path, suite=[]).con
    for status, outcome in schema.OUTCOME_OF_STATUS.items():
        assert con.execute("SELECT status_outcome($s)", {"s": status}).fetchone() == (outcome,), status


def test_the_sql_mostly_xla_threshold_is_the_harness_one(tmp_path) -> None:
    con = Metrics(tmp_path, suite=[]).con
    assert con.execute("SELECT mostly_xla_below()").fetchone() == (MOSTLY_XLA_BELOW,)
