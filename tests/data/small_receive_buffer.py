"""Bulk into a receiver with a tiny receive buffer (SO_RCVBUF 2048): Linux offers a 1460-byte window
and the sender cuts its segments to half of it (730 bytes, tcp_bound_to_half_wnd), well below the
1460-byte MSS both SYNs offered. How tests/data/linux_small_receive_buffer.pcap was made (as root),
two network namespaces joined by a veth pair, offloads off, tbf at 20 Mbit/s each way:

    ip netns add sA; ip netns add sB
    ip link add va netns sA type veth peer name vb netns sB
    ip -n sA addr add 10.89.0.1/24 dev va; ip -n sB addr add 10.89.0.2/24 dev vb
    ip -n sA link set va up; ip -n sB link set vb up
    ip netns exec sA ethtool -K va tso off gso off gro off   # and vb in sB
    ip netns exec sA tc qdisc add dev va root tbf rate 20mbit burst 16kb latency 20ms   # and vb in sB
    ip netns exec sB python3 small_receive_buffer.py server 7001 300000 &
    ip netns exec sB tcpdump -i vb -s 128 -w linux_small_receive_buffer.pcap --time-stamp-precision=nano port 7001 &
    ip netns exec sA python3 small_receive_buffer.py client 7001 10.89.0.2 2048
"""

import socket
import sys


def main() -> None:
    role, port = sys.argv[1], int(sys.argv[2])
    if role == "server":
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("0.0.0.0", port))
        listener.listen(1)
        conn, _ = listener.accept()
        conn.sendall(b"x" * int(sys.argv[3]))
        conn.close()
        return
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(sys.argv[4]))
    client.connect((sys.argv[3], port))
    got = 0
    while chunk := client.recv(65536):
        got += len(chunk)
    print(got)


if __name__ == "__main__":
    main()
