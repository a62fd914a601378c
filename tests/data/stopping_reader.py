"""A reader that stops: over loopback the server sends 4 MB to a client with a 64 KB receive
buffer that sleeps 400 ms after each of its first three megabytes. Its window falls to zero and
reopens when it reads again. How tests/data/loopback_zero_window.pcap was made (as root):

    tcpdump -i lo -s 128 -w loopback_zero_window.pcap --time-stamp-precision=nano port 6010 &
    python3 stopping_reader.py 6010
"""

import socket
import sys
import threading
import time


def serve(listener: socket.socket) -> None:
    conn, _ = listener.accept()
    conn.sendall(b"x" * (4 << 20))
    conn.close()


def main() -> None:
    port = int(sys.argv[1])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(1)
    server = threading.Thread(target=serve, args=(listener,))
    server.start()
    client = socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    client.connect(("127.0.0.1", port))
    got = pauses = 0
    while chunk := client.recv(65536):
        got += len(chunk)
        if got > (1 << 20) * (pauses + 1) and pauses < 3:
            time.sleep(0.4)
            pauses += 1
    print(got)
    client.close()
    server.join()


if __name__ == "__main__":
    main()
