"""Issue 17: the simulator's ground truth names what the run did.

The five mislabelled cases of the issue, and an audit over a generated corpus (every personality,
the Nagle variant families, every link type, request/response and bulk, loss on either path):
each truth stall checked against the run's own records (simulate/truth_audit.py).
"""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from stallscope.vocabulary import Cause
from stallscope.simulate.run_bulk import BulkConfig, run_bulk
from stallscope.simulate.truth_audit import audit

SENDER = "10.0.0.1"
RECEIVER = "10.0.0.2"


def _labels(result, src: str = SENDER) -> Counter:
    return Counter((s.cause, s.detail) for s in result.stalls if s.direction.startswith(src + ":"))


def _timeouts(result) -> list:
    return [s for s in result.stalls if s.evidence.get("trigger") == "rto" or "timeout_uids" in s.evidence]


# --- the five cases -----------------------------------------------------------------------------


def test_lost_acks_only_are_an_ack_loss_timeout() -> None:
    cfg = BulkConfig(personality="bsd44", link="fastethernet", sndbuf=65536, rcvbuf=65536, bytes=1048576, seed=2)
    r = run_bulk(cfg, impairments={"reverse_loss": 0.05})
    assert r.drops and all(d.payload_len == 0 for d in r.drops)  # only ACKs were lost
    timeouts = _timeouts(r)
    assert timeouts, "the run has a timeout"
    assert {s.cause for s in timeouts} == {Cause.ACK_LOSS_TIMEOUT}
    assert not audit(r)


@pytest.mark.parametrize("cfg", [
    BulkConfig(personality="linux20", link="atm140", sndbuf=6144, rcvbuf=61440, write=8192, read=8192, bytes=131072),
    BulkConfig(personality="linux20", link="ethernet10", sndbuf=2048, rcvbuf=4096, write=10, read=200,
               bytes=65536, seed=290),
], ids=["atm140", "ethernet10"])
def test_a_timeout_with_nothing_dropped_is_spurious(cfg: BulkConfig) -> None:
    r = run_bulk(cfg)
    assert r.drops == [] and r.timeouts > 0
    timeouts = _timeouts(r)
    assert timeouts
    assert {s.cause for s in timeouts} == {Cause.SPURIOUS_TIMEOUT}
    assert not any(s.cause in (Cause.SINGLE_LOSS_TIMEOUT, Cause.BURST_LOSS_TIMEOUT) for s in r.stalls)


def test_think_time_is_application_idle_not_nagle() -> None:
    think = 300_000_000
    r = run_bulk(BulkConfig(personality="freebsd4", link="fddi", write=32768, bytes=1 << 19, think_ns=think))
    long = [s for s in r.stalls if s.duration_ns >= think]
    assert len(long) >= 10
    assert {s.cause for s in long} == {Cause.APPLICATION_IDLE}
    assert not audit(r)


def test_turnaround_is_application_idle_not_nagle() -> None:
    r = run_bulk(BulkConfig(personality="freebsd4", link="oc3", write=29382, cost="sun_ipx", reply=200, bytes=587640))
    sender = [s for s in r.stalls if s.direction.startswith(SENDER + ":")]
    assert len(sender) >= 10
    assert not any(s.cause is Cause.NAGLE_DELAYED_ACK and s.evidence.get("b_sent") == 0 for s in r.stalls)
    assert _labels(r)[(Cause.APPLICATION_IDLE, None)] >= 10
    assert not audit(r)


def test_borman_sends_a_short_segment_on_an_idle_connection() -> None:
    """Borman's rule falls back on the ordinary Nagle test: nothing unacknowledged, no delay. The
    MORE flag it was built with held 4096 bytes for the 5 s persist timer 60 times (300 s)."""
    cfg = BulkConfig(personality="sunos41", link="oc3", sndbuf=4096, rcvbuf=262144, write=65536, read=8192,
                     bytes=262144, nagle="BORMAN")
    r = run_bulk(cfg)
    assert r.completed
    assert r.duration_s < 60
    assert not any(s.evidence.get("trigger") == "persist" for s in r.stalls)
    assert not any(s.cause is Cause.NAGLE_DELAYED_ACK and s.evidence.get("b_sent") == 0 for s in r.stalls)
    assert not audit(r)


@pytest.mark.parametrize("personality", ["tru64", "linux20"])
def test_textbook_of_sfs_is_of_sfs_whatever_the_sender(personality: str) -> None:
    """One full segment and the message's short tail: the tail waits for the delayed ACK of the
    odd full segment (was buffer_tearing for tru64 and linux20 senders)."""
    r = run_bulk(_of_sfs_config(personality))
    nagle = [s for s in r.stalls if s.cause is Cause.NAGLE_DELAYED_ACK]
    assert len(nagle) >= 15
    assert {s.detail for s in nagle} == {"of_sfs"}
    # The message's short final segment held behind the full segment sent and unacknowledged.
    maxseg = r.ground_truth.summary["maxseg"]
    assert all(s.evidence["b_sent"] == maxseg and s.evidence["held"] == 12192 - maxseg
               and not s.evidence["writing"] for s in nagle)
    assert not audit(r)


def test_bsd44_tears_the_same_message_at_its_first_cluster() -> None:
    """4.4BSD calls tcp_output per 2 KB cluster: the idle connection sends the first 2048 bytes
    alone, then a full 8192-byte segment, and the 1952-byte tail waits behind both. The write was
    torn, not sent as full segments and a short final one."""
    r = run_bulk(_of_sfs_config("bsd44"))
    nagle = [s for s in r.stalls if s.cause is Cause.NAGLE_DELAYED_ACK]
    assert len(nagle) >= 15
    assert {s.detail for s in nagle} == {"buffer_tearing"}
    maxseg = r.ground_truth.summary["maxseg"]
    assert all(s.evidence["b_sent"] % maxseg != 0 and s.evidence["held"] == 12192 - s.evidence["b_sent"]
               for s in nagle)
    assert not audit(r)


def test_sunos_copy_rule_leaves_no_full_segment_so_the_same_exchange_is_copy_rule() -> None:
    """SunOS hands tcp_output 4 KB at a time (Moldeklev 2.1): the idle connection sends the first
    4096 bytes alone and the 8096-byte rest is held behind it. No full segment goes: the copy
    rule, not OF+SFS, split the message."""
    r = run_bulk(_of_sfs_config("sunos41"))
    nagle = [s for s in r.stalls if s.cause is Cause.NAGLE_DELAYED_ACK]
    assert len(nagle) >= 15
    assert {s.detail for s in nagle} == {"copy_rule"}
    maxseg = r.ground_truth.summary["maxseg"]
    assert all(s.evidence["b_sent"] == 4096 < maxseg and s.evidence["held"] == 12192 - 4096 for s in nagle)
    assert not audit(r)


def _of_sfs_config(personality: str) -> BulkConfig:
    return BulkConfig(personality=personality, receiver_personality="bsd44", link="atm140", sndbuf=65536,
                      rcvbuf=65536, write=12192, read=65536, reply=1, bytes=12192 * 20)


def test_a_write_torn_by_the_buffer_is_buffer_tearing_and_sunos_chunks_the_copy_rule() -> None:
    # A 4 KB buffer under a 12192-byte write: the short segments are pieces of the write.
    base = dict(receiver_personality="bsd44", link="atm140", sndbuf=4096, rcvbuf=65536, write=12192,
                read=65536, bytes=12192 * 20)
    torn = run_bulk(BulkConfig(personality="bsd44", **base))
    details = {s.detail for s in torn.stalls if s.cause is Cause.NAGLE_DELAYED_ACK}
    assert "of_sfs" not in details and "copy_rule" not in details
    assert not audit(torn)


def test_request_response_labels_both_sides() -> None:
    cfg = BulkConfig(personality="bsd44", link="atm140", sndbuf=65536, rcvbuf=65536, write=12192, read=65536,
                     reply=1, bytes=12192 * 20)
    r = run_bulk(cfg)
    directions = {s.direction.split(":")[0] for s in r.stalls}
    assert directions == {SENDER, RECEIVER}
    replies = [s for s in r.stalls if s.direction.startswith(RECEIVER + ":")]
    # The replying side waits for each request: nothing to send.
    assert {s.cause for s in replies} == {Cause.APPLICATION_IDLE}
    assert r.ground_truth.to_json()["stalls"]


def test_bulk_runs_have_no_receiver_stalls() -> None:
    r = run_bulk(BulkConfig(personality="bsd44", link="ethernet10", bytes=262144))
    assert not [s for s in r.stalls if s.direction.startswith(RECEIVER + ":")]


# --- the audit ----------------------------------------------------------------------------------

PERSONALITIES = ("sunos41", "bsd44", "freebsd4", "tru64", "linux20", "linux")
LINKS = ("atm140", "oc3", "ethernet10", "fddi", "fastethernet", "gige")
# One of each family: the personality's own, off, Minshall, MSMV, EOM, MORE, DLDET, Borman, cork.
NAGLES = (None, "OFF", "MINSHALL", "MSMV", "EOM", "E+M", "MIN+MORE", "DLDET", "E+M+D", "BORMAN",
          "UNACKED-MSS", "CORK")
LOSSES = (None, {"loss": 0.02}, {"reverse_loss": 0.05}, {"loss": 0.01, "reverse_loss": 0.02})


def corpus(n: int, seed: int = 17) -> list[tuple[BulkConfig, dict | None]]:
    """n runs covering every personality, link, Nagle family, both app shapes and both loss paths
    (the first len(PERSONALITIES) * len(LINKS) runs put each personality on each link once)."""
    rng = random.Random(seed)
    pairs = list(itertools.product(PERSONALITIES, LINKS))
    out = []
    for i in range(n):
        p, link = pairs[i % len(pairs)] if i < len(pairs) else (rng.choice(PERSONALITIES), rng.choice(LINKS))
        nagle = NAGLES[i % len(NAGLES)]
        loss = LOSSES[(i // 3) % len(LOSSES)]
        reply = (0, 1, 200)[i % 3]
        write = rng.choice((10, 512, 4096, 8192, 12192, 29382, 65536))
        sndbuf = rng.choice((2048, 4096, 8192, 16384, 32768, 65536))
        rcvbuf = rng.choice((4096, 8192, 16384, 32768, 61440, 65536))
        nbytes = min(write * rng.choice((8, 16, 24)), 1 << 18) if reply else rng.choice((65536, 131072, 262144))
        nbytes = max(nbytes, write)
        cfg = BulkConfig(personality=p, link=link, sndbuf=sndbuf, rcvbuf=rcvbuf, write=write,
                         read=rng.choice((200, 4096, 8192, 65536)), bytes=nbytes, reply=reply, nagle=nagle,
                         think_ns=rng.choice((0, 0, 0, 50_000_000)), seed=rng.randrange(1000))
        out.append((cfg, dict(loss) if loss else None))
    return out


def _audit_corpus(runs: list[tuple[BulkConfig, dict | None]]) -> tuple[Counter, list[str]]:
    causes: Counter = Counter()
    violations: list[str] = []
    for cfg, im in runs:
        r = run_bulk(cfg, impairments=im)
        causes.update(s.cause for s in r.stalls)
        violations += [f"{cfg} {im}: {v}" for v in audit(r)]
    return causes, violations


def test_corpus_covers_what_the_issue_asks() -> None:
    runs = corpus(300)
    assert {c.personality for c, _ in runs} == set(PERSONALITIES)
    assert {c.link for c, _ in runs} == set(LINKS)
    assert {c.nagle for c, _ in runs} == set(NAGLES)
    assert {c.reply for c, _ in runs} == {0, 1, 200}
    assert any(im and "loss" in im for _, im in runs) and any(im and "reverse_loss" in im for _, im in runs)


def test_audit_catches_a_wrong_label() -> None:
    """The audit is not vacuous: relabel a delivered timeout as a loss and a turnaround as Nagle."""
    import dataclasses

    r = run_bulk(BulkConfig(personality="linux20", link="atm140", sndbuf=6144, rcvbuf=61440, write=8192,
                            read=8192, bytes=131072))
    spurious = next(s for s in r.stalls if s.cause is Cause.SPURIOUS_TIMEOUT)
    r.ground_truth.stalls[r.ground_truth.stalls.index(spurious)] = dataclasses.replace(
        spurious, cause=Cause.SINGLE_LOSS_TIMEOUT)
    assert [v.rule for v in audit(r)] == ["loss cause without a dropped data segment"]
    t = run_bulk(BulkConfig(personality="freebsd4", link="oc3", write=29382, cost="sun_ipx", reply=200,
                            bytes=587640))
    idle = next(s for s in t.stalls if s.cause is Cause.APPLICATION_IDLE and s.direction.startswith(SENDER))
    t.ground_truth.stalls[t.ground_truth.stalls.index(idle)] = dataclasses.replace(
        idle, cause=Cause.NAGLE_DELAYED_ACK, detail="of_sfs", evidence={**idle.evidence, "b_sent": 0, "held": 100})
    assert "Nagle cause with nothing unacknowledged (packet records)" in [v.rule for v in audit(t)]


def test_audit_subset_has_no_violations() -> None:
    runs = corpus(300)[::25]  # 12 runs spread over the corpus
    causes, violations = _audit_corpus(runs)
    assert sum(causes.values()) > 0
    assert violations == [], "\n".join(violations[:20])


@pytest.mark.slow
def test_audit_corpus_has_no_violations() -> None:
    causes, violations = _audit_corpus(corpus(320))
    # The corpus reaches the causes the issue is about.
    for cause in (Cause.NAGLE_DELAYED_ACK, Cause.APPLICATION_IDLE, Cause.ACK_LOSS_TIMEOUT):
        assert causes[cause] > 0, causes
    assert causes[Cause.BURST_LOSS_TIMEOUT] + causes[Cause.SINGLE_LOSS_TIMEOUT] > 0, causes
    assert violations == [], f"{len(violations)} violations:\n" + "\n".join(violations[:30])
