"""Sniffs one HTTP request off a Docker bridge, as a box that could read the bridge would.

Usage: python3 sniff.py IFACE DST_IP DST_PORT TIMEOUT_S
Prints "ready" once listening, then the hex of the first TCP payload to DST_IP:DST_PORT that
holds a whole request head (method line up to the blank line), and exits; exits 1 on timeout.
Needs root (an AF_PACKET socket). Standard library only.
"""
import socket
import struct
import sys
import time

iface, dst_ip, dst_port, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
want_ip = socket.inet_aton(dst_ip)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
s.bind((iface, 0))
s.settimeout(0.2)
print("ready", flush=True)
deadline = time.time() + timeout
methods = (b"GET ", b"POST ", b"PUT ", b"DELETE ")
while time.time() < deadline:
    try:
        frame = s.recv(65535)
    except socket.timeout:
        continue
    if len(frame) < 14 or frame[12:14] != b"\x08\x00":
        continue
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[9] != 6 or ip[16:20] != want_ip:
        continue
    tcp = ip[ihl:]
    if struct.unpack("!H", tcp[2:4])[0] != dst_port:
        continue
    off = (tcp[12] >> 4) * 4
    total = struct.unpack("!H", ip[2:4])[0]
    payload = ip[ihl + off : total]
    if payload.startswith(methods) and b"\r\n\r\n" in payload:
        print(payload.hex(), flush=True)
        sys.exit(0)
sys.exit(1)
