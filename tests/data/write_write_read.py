"""Write-write-read over loopback: the server answers each 50-byte request with two 100-byte writes.
With Nagle on, the second write waits for the ACK of the first, which the client delays (Linux's
40 ms delayed-ACK timer; it has nothing to send until the whole answer came). With TCP_NODELAY the
second goes at once. How the captures in tests/data were made (as root, tcpdump on lo):

    tcpdump -i lo -s 128 -w loopback_write_write_read.pcap --time-stamp-precision=nano port 6001 &
    python3 write_write_read.py 6001 nagle 40
    tcpdump ... port 6004 & python3 write_write_read.py 6004 nodelay 40
"""

import socket
import sys
import threading
import time


def serve(listener: socket.socket, nodelay: bool, n: int) -> None:
    conn, _ = listener.accept()
    if nodelay:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _ in range(n):
        req = b""
        while len(req) < 50:
            req += conn.recv(50 - len(req))
        conn.sendall(b"h" * 100)  # header
        conn.sendall(b"b" * 100)  # body: held by Nagle behind the unacknowledged header
    conn.close()


def main() -> None:
    port, nodelay, n = int(sys.argv[1]), sys.argv[2] == "nodelay", int(sys.argv[3])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(1)
    server = threading.Thread(target=serve, args=(listener, nodelay, n))
    server.start()
    client = socket.create_connection(("127.0.0.1", port))
    t0 = time.time()
    for _ in range(n):
        client.sendall(b"r" * 50)
        got = 0
        while got < 200:
            got += len(client.recv(200 - got))
    print(f"{(time.time() - t0) / n * 1000:.2f} ms per request")
    client.close()
    server.join()


if __name__ == "__main__":
    main()
