"""Loss attribution: the drop log decides which cause an RTO stall is recorded under."""

from stallscope.vocabulary import Cause
from stallscope.simulate.links.drops import DropLog
from stallscope.simulate.loss_attribution import make_loss_classifier
from stallscope.simulate.segment import ACK, Segment


def seg(uid, seq, src="a", dst="b"):
    return Segment(src, dst, 1, 2, seq, 0, ACK, 100, payload_len=1000, uid=uid)


def log_with(*drops):
    log = DropLog()
    for t, uid, seq, reason in drops:
        log.record(t, seg(uid, seq), reason, "link")
    return log


def test_cell_loss_in_two_packets_is_a_burst_with_atm_detail():
    log = log_with((10, 1, 0, "atm_cell_loss"), (12, 2, 1000, "atm_ppd"))
    classify = make_loss_classifier(log)
    assert classify([1]) == (Cause.BURST_LOSS_TIMEOUT, "atm_cell_loss")
    assert classify.last_evidence["packets_lost"] == 2


def test_one_overflow_is_a_single_loss_and_several_a_queue_overflow_burst():
    assert make_loss_classifier(log_with((5, 1, 0, "queue_overflow")))([1]) == (Cause.SINGLE_LOSS_TIMEOUT, None)
    burst = log_with((5, 1, 0, "queue_overflow"), (6, 2, 1000, "queue_overflow"), (7, 3, 2000, "queue_overflow"))
    assert make_loss_classifier(burst)([1, 2, 3]) == (Cause.BURST_LOSS_TIMEOUT, "queue_overflow")


def test_structural_causes_win_even_for_one_packet():
    assert make_loss_classifier(log_with((1, 1, 0, "jumbo_slot_exhaustion")))([1])[0] is Cause.JUMBO_SLOT_EXHAUSTION
    assert make_loss_classifier(log_with((1, 1, 0, "pmtu_blackhole")))([1])[0] is Cause.PMTU_BLACKHOLE
    assert make_loss_classifier(log_with((1, 1, 0, "exceeds_mtu")))([1])[0] is Cause.MSS_MISMATCH
    mixed = log_with((1, 1, 0, "queue_overflow"), (2, 2, 1000, "jumbo_slot_exhaustion"))
    assert make_loss_classifier(mixed)([1]) == (Cause.JUMBO_SLOT_EXHAUSTION, None)


def test_retransmissions_of_the_same_segment_count_as_one_packet():
    log = log_with((1, 1, 0, "queue_overflow"), (900, 7, 0, "queue_overflow"))
    assert make_loss_classifier(log)([7]) == (Cause.SINGLE_LOSS_TIMEOUT, None)


def test_each_timeout_only_sees_drops_since_the_previous_answer():
    log = log_with((1, 1, 0, "atm_cell_loss"), (2, 2, 1000, "atm_cell_loss"))
    classify = make_loss_classifier(log)
    assert classify([1])[0] is Cause.BURST_LOSS_TIMEOUT
    log.record(50, seg(3, 5000), "queue_overflow", "link")
    assert classify([3]) == (Cause.SINGLE_LOSS_TIMEOUT, None)


def test_other_flows_do_not_leak_in_and_unknown_uids_fall_back():
    log = log_with((1, 1, 0, "queue_overflow"))
    log.record(2, seg(2, 0, src="c", dst="d"), "queue_overflow", "link")
    assert make_loss_classifier(log)([1]) == (Cause.SINGLE_LOSS_TIMEOUT, None)
    # None of the timed-out segments dropped, nothing lost at all: the RTO was spurious (issue 17).
    empty = make_loss_classifier(DropLog())
    assert empty([5]) == (Cause.SPURIOUS_TIMEOUT, None)
    assert empty([5, 6]) == (Cause.SPURIOUS_TIMEOUT, None)


def test_a_timeout_whose_data_arrived_but_whose_acks_were_lost_is_an_ack_loss():
    log = DropLog()
    ack = Segment("b", "a", 2, 1, 0, 0, ACK, 100, payload_len=0, uid=(1 << 40) + 7)
    log.record(1, ack, "random_loss", "rev-loss")
    classify = make_loss_classifier(log)
    assert classify([5, 6]) == (Cause.ACK_LOSS_TIMEOUT, None)
    assert classify.last_evidence["acks_lost"] == 1
    # The lost ACK explained one timeout; the next with nothing new lost is spurious.
    assert classify([7]) == (Cause.SPURIOUS_TIMEOUT, None)
    # A dropped data segment among the timed-out ones stays a loss, whatever ACKs were lost.
    log.record(2, ack, "random_loss", "rev-loss")
    log.record(3, seg(8, 0), "queue_overflow", "link")
    assert classify([8]) == (Cause.SINGLE_LOSS_TIMEOUT, None)


def test_a_timeout_on_one_flow_leaves_the_other_flows_drops_for_its_own_timeout():
    log = log_with((1, 1, 0, "atm_cell_loss"))
    log.record(2, seg(2, 0, src="c", dst="d"), "queue_overflow", "link")
    log.record(3, seg(3, 1000, src="c", dst="d"), "queue_overflow", "link")
    classify = make_loss_classifier(log)
    assert classify([1]) == (Cause.SINGLE_LOSS_TIMEOUT, None)
    # flow c->d's timeout still sees both of its drops although they were logged earlier
    assert classify([2]) == (Cause.BURST_LOSS_TIMEOUT, "queue_overflow")
