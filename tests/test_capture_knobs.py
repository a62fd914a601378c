"""Host knobs: socket options reach the socket, routes and sysctls are spelled as iproute2/sysctl expect."""

from __future__ import annotations

import socket

import pytest

from stallscope.capture.knobs import HostKnobs, RouteKnobs, SocketKnobs


def test_socket_knobs_are_set_on_the_socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        SocketKnobs(sndbuf=32 * 1024, rcvbuf=64 * 1024, nodelay=True, cork=True).apply(s)
        # Linux doubles the requested buffer sizes for its own bookkeeping.
        assert s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == 2 * 32 * 1024
        assert s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) == 2 * 64 * 1024
        assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 1
    finally:
        s.close()


def test_congestion_control_knob_is_set_on_the_socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        SocketKnobs(congestion="reno").apply(s)
        assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0") == b"reno"
    finally:
        s.close()


def test_default_socket_knobs_leave_the_socket_alone():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        before = s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        SocketKnobs().apply(s)
        assert s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == before
        assert s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
    finally:
        s.close()


def test_route_with_locked_mtu_and_advmss():
    argv = RouteKnobs(mtu=1500, mtu_lock=True, advmss=8960).argv("10.77.0.0/24", "s0")
    assert argv == ["ip", "route", "replace", "10.77.0.0/24", "dev", "s0", "mtu", "lock", "1500", "advmss", "8960"]
    assert RouteKnobs(mtu=1400).argv("10.77.0.0/24", "s0")[-2:] == ["mtu", "1400"]
    assert RouteKnobs().argv("10.77.0.0/24", "s0") is None


def test_unknown_sysctl_is_rejected_naming_the_known_ones():
    with pytest.raises(ValueError, match="tcp_sak.*known"):
        HostKnobs(sysctls={"tcp_sak": 0})


def test_socket_knobs_round_trip_json():
    k = SocketKnobs(sndbuf=1, nodelay=True, quickack=True)
    assert SocketKnobs.from_json(k.to_json()) == k
    assert SocketKnobs.from_json(None) == SocketKnobs()
