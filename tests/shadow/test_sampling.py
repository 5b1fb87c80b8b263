"""Deterministic sampling, the rate cap, the spend guard and the circuit breaker."""

from __future__ import annotations

from shadow.breaker import CircuitBreaker, State
from shadow.sampling import RateCap, SpendGuard, is_sampled, sample_point


def test_sampling_is_deterministic_and_close_to_the_rate() -> None:
    """The same id is always sampled the same way; 20,000 ids land within 1.5 points of the rate."""
    ids = [f"d-{i}" for i in range(20_000)]
    first = [is_sampled(i, 0.25) for i in ids]
    assert first == [is_sampled(i, 0.25) for i in ids]
    assert abs(sum(first) / len(ids) - 0.25) < 0.015


def test_sampling_is_monotone_and_salted() -> None:
    """Raising the rate keeps every id a lower rate kept; a different salt draws a different sample."""
    ids = [f"d-{i}" for i in range(5_000)]
    low = {i for i in ids if is_sampled(i, 0.1)}
    high = {i for i in ids if is_sampled(i, 0.3)}
    assert low < high
    salted = {i for i in ids if is_sampled(i, 0.1, salt="week-2")}
    assert len(salted & low) < 0.3 * len(low)
    assert is_sampled("x", 1.0)
    assert not is_sampled("x", 0.0)
    assert 0.0 <= sample_point("x") < 1.0


def test_rate_cap_limits_to_the_rate() -> None:
    """A 10/s cap lets a one-second burst of 10 through, then refills at 10 per second."""
    cap = RateCap(10.0, stamp=100.0)
    assert sum(cap.allow(now=100.0) for _ in range(50)) == 10
    assert sum(cap.allow(now=100.5) for _ in range(50)) == 5


def test_spend_guard_counts_calls_and_tokens_per_hour() -> None:
    """Calls over the hourly budget are refused; tokens spent close the budget too; a new hour resets."""
    guard = SpendGuard(calls_per_hour=3, tokens_per_hour=None)
    assert [guard.allow_call(now=3600.0) for _ in range(4)] == [True, True, True, False]
    assert guard.allow_call(now=7200.0)
    tokens = SpendGuard(calls_per_hour=None, tokens_per_hour=100)
    assert tokens.allow_call(now=0.0)
    tokens.spend_tokens(100, now=0.0)
    assert not tokens.allow_call(now=1.0)


def test_breaker_opens_half_opens_and_closes() -> None:
    """Three failures open it; after the pause one trial goes through; success closes, failure reopens."""
    breaker = CircuitBreaker(failure_threshold=3, reset_after_s=10.0)
    for _ in range(3):
        assert breaker.allow(now=0.0)
        breaker.failure(now=0.0)
    assert breaker.state is State.OPEN
    assert not breaker.allow(now=5.0)
    assert breaker.allow(now=10.0)
    assert breaker.state is State.HALF_OPEN
    assert not breaker.allow(now=10.0)  # only one trial
    breaker.failure(now=10.0)
    assert breaker.state is State.OPEN
    assert breaker.allow(now=20.0)
    breaker.success()
    assert breaker.state is State.CLOSED
    assert breaker.allow(now=20.0)
