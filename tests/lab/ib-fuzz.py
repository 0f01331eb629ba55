#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
"""ib-fuzz: random and mutated native IB frames at an HCA, for VM test 59
over InfiniBand. It joins the lab's IB switch as one more channel adapter
(the fake CA of the switch's host tests, userspace/vswitchd/test/ib_hca.py:
an SMA the subnet manager sweeps, gives a LID and makes Active; the switch
forwards data only between Active ports), then sends frames from its LID
to the target's. Every frame has a good LRH, PktLen and VCRC, so the switch
forwards it, unless its class breaks exactly that; then:
  random     random bytes after a BTH of a random opcode
  valid      a well-formed packet of a real opcode, real or random QPN,
             random PSN, its extension headers, a right ICRC
  near-psn   the same with PSNs close to one another
  truncated  cut inside the BTH's extension headers (PktLen fixed up)
  bad-icrc   a well-formed packet with a wrong ICRC
  rkey       RDMA WRITE / READ / atomics with random rkeys, addresses and
             lengths (huge ones too)
  opcode     any opcode byte, reserved ones included
  gsi        UD SENDs to QP1 with random MAD bytes
  bth        bad transport version, P_Key, pad count
  grh        LNH 3 with a GRH of random bytes (a wrong DGID, IPVer, NxtHdr)
Deterministic for a seed. Prints how many frames of each class it sent.
With -V N it then sends N well-formed frames with one bit flipped after
their VCRC was written, as on the link into the switch: the switch's VCRC
check must drop every one (its port's ib_drop_vcrc, PMA PortRcvErrors).
Usage: ib-fuzz.py SWITCH_SOCKET DLID -q QPN [-q QPN...] -n COUNT -S SEED [-V N]"""

import argparse
import os
import random
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "userspace", "vswitchd", "test"))
import ib_hca  # noqa: E402
import ib_tests as T  # noqa: E402

# opcode: the extension headers after the BTH (R RETH 16, A AETH 4, I
# ImmDt/IETH 4, T AtomicETH 28, K AtomicAckETH 8, D DETH 8) and a payload
OPS = {
    0x00: "P", 0x01: "P", 0x02: "P", 0x03: "IP", 0x04: "P", 0x05: "IP", 0x06: "RP",
    0x07: "P", 0x08: "P", 0x09: "IP", 0x0a: "RP", 0x0b: "RIP", 0x0c: "R",
    0x0d: "AP", 0x0e: "P", 0x0f: "AP", 0x10: "AP", 0x11: "A", 0x12: "AK",
    0x13: "T", 0x14: "T", 0x16: "IP", 0x17: "IP", 0x64: "DP", 0x65: "DIP",
}
EXT = {"R": 16, "A": 4, "I": 4, "T": 28, "K": 8, "D": 8}
CLASSES = ("random", "valid", "near-psn", "truncated", "bad-icrc", "rkey", "opcode", "gsi",
           "bth", "grh")


def frame(dlid, slid, bth, rest, lnh=2, grh=b"", sl=0, bad_icrc=False, pktlen=None):
    n = 8 + len(grh) + 12 + len(rest) + 4
    assert n % 4 == 0
    lrh = struct.pack("!BBHHH", 0, (sl << 4) | lnh, dlid, (pktlen or n) // 4 & 0x7FF, slid)
    body = lrh + grh + bth + rest
    c = T.icrc(body, lnh)
    if bad_icrc:
        c ^= 1 << random.randrange(32)
    f = body + struct.pack("<I", c)
    return f + struct.pack("<H", T.vcrc(f))


def bth(op, qpn, psn, pad=0, tver=0, pkey=0xFFFF, ackreq=0):
    return struct.pack("!BBHII", op, (pad << 4) | tver, pkey, qpn & 0xFFFFFF,
                       (ackreq << 31) | (psn & 0xFFFFFF))


def rnd(n):
    return bytes(random.getrandbits(8) for _ in range(n))


def exts(op, rkey_class=False):
    out = b""
    for x in OPS.get(op, ""):
        if x == "P":
            continue
        if x == "R" and rkey_class:
            length = random.choice((0, 1, 4096, 1 << 20, 0x7FFFFFFF, 0xFFFFFFFF,
                                    random.getrandbits(32)))
            out += struct.pack("!QII", random.getrandbits(64), random.getrandbits(32), length)
        elif x == "D":
            out += struct.pack("!II", random.choice((0x11111111, random.getrandbits(32))),
                               random.getrandbits(24))
        else:
            out += rnd(EXT[x])
    return out


def payload(op, mtu=4096):
    if "P" not in OPS.get(op, ""):
        return b"", 0
    n = random.choice((0, 1, 3, 4, 64, 255, 1024, random.randrange(mtu + 1)))
    pad = -n % 4
    return rnd(n) + b"\0" * pad, pad


def make(cls, dlid, slid, qpns, near_psn):
    qpn = random.choice(qpns) if random.random() < 0.5 else random.getrandbits(24)
    op = random.choice(list(OPS))
    if cls == "random":
        n = random.randrange(0, 256) & ~3
        return frame(dlid, slid, bth(random.getrandbits(8), qpn, random.getrandbits(24)), rnd(n))
    if cls in ("valid", "near-psn", "bad-icrc", "truncated"):
        psn = (near_psn + random.randrange(-8, 9)) if cls == "near-psn" else random.getrandbits(24)
        pl, pad = payload(op)
        rest = exts(op) + pl
        if cls == "truncated":
            x = exts(op)
            rest = x[:random.randrange(len(x) + 1)] if x else b""
            rest = rest[:len(rest) & ~3]
            pad = 0
        return frame(dlid, slid, bth(op, qpn, psn, pad=pad, ackreq=random.getrandbits(1)), rest,
                     bad_icrc=cls == "bad-icrc")
    if cls == "rkey":
        op = random.choice((0x06, 0x0a, 0x0b, 0x0c, 0x13, 0x14))
        pl, pad = payload(op)
        return frame(dlid, slid, bth(op, random.choice(qpns), random.getrandbits(24), pad=pad),
                     exts(op, rkey_class=True) + pl)
    if cls == "opcode":
        op = random.getrandbits(8)
        n = random.randrange(0, 128) & ~3
        return frame(dlid, slid, bth(op, qpn, random.getrandbits(24)), rnd(n))
    if cls == "gsi":
        deth = struct.pack("!II", 0x80010000, random.getrandbits(24))
        return frame(dlid, slid, bth(0x64, 1, random.getrandbits(24)), deth + rnd(256))
    if cls == "bth":
        pl, pad = payload(op)
        k = random.randrange(3)
        b = bth(op, qpn, random.getrandbits(24),
                pad=random.randrange(4) if k == 2 else pad,
                tver=random.randrange(1, 16) if k == 0 else 0,
                pkey=random.getrandbits(16) & 0x7FFF if k == 1 else 0xFFFF)
        return frame(dlid, slid, b, exts(op) + pl)
    # grh
    pl, pad = payload(op)
    g = bytearray(rnd(40))
    if random.random() < 0.5:
        g[0] = 0x60
        g[6] = 0x1B
    g[4:6] = struct.pack("!H", 12 + len(exts(op)) + len(pl) + 4)
    return frame(dlid, slid, bth(op, qpn, random.getrandbits(24), pad=pad), exts(op) + pl,
                 lnh=3, grh=bytes(g))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("switch")
    p.add_argument("dlid", type=lambda s: int(s, 0))
    p.add_argument("-q", dest="qpns", action="append", type=lambda s: int(s, 0), default=[])
    p.add_argument("-n", dest="count", type=int, default=5000)
    p.add_argument("-S", dest="seed", type=int, default=59)
    p.add_argument("-P", dest="psn", type=lambda s: int(s, 0), default=0)
    p.add_argument("-V", dest="bad_vcrc", type=int, default=0,
                   help="then this many frames with a bit flipped after the VCRC")
    p.add_argument("-T", dest="timeout", type=float, default=180,
                   help="seconds to wait for the SM to make the port Active")
    a = p.parse_args()
    random.seed(a.seed)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(a.switch)
    ca = ib_hca.CA(s, 0x02c5f0220000_0000 | random.getrandbits(16), "ib-fuzz")
    stop = threading.Event()
    t = threading.Thread(target=ca.run, args=(stop,), daemon=True)
    t.start()
    t0 = time.time()
    if not ib_hca.wait_for(lambda: ca.state == 4 and ca.lid, a.timeout):
        print("ib-fuzz: error: the SM did not make the port Active in %d s (state %d, LID %d)"
              % (a.timeout, ca.state, ca.lid), file=sys.stderr)
        return 1
    print("ib-fuzz: port Active after %.1f s, LID %d" % (time.time() - t0, ca.lid))
    sent = {c: 0 for c in CLASSES}
    for i in range(a.count):
        c = CLASSES[i % len(CLASSES)]
        f = make(c, a.dlid, ca.lid, a.qpns or [random.getrandbits(24)], a.psn)
        s.send(f)     # blocks while the switch applies back-pressure
        sent[c] += 1
        if i % 200 == 199:
            time.sleep(0.05)     # the SMA thread answers the SM between bursts
    for i in range(a.bad_vcrc):
        f = bytearray(make("valid", a.dlid, ca.lid, a.qpns or [random.getrandbits(24)], a.psn))
        f[random.randrange(len(f))] ^= 1 << random.randrange(8)
        s.send(bytes(f))
    stop.set()
    t.join(1)
    s.close()
    print("ib-fuzz: sent %d frames from LID %d to LID %d: %s%s" % (
        a.count, ca.lid, a.dlid, " ".join("%s=%d" % (c, sent[c]) for c in CLASSES),
        "; then %d with a bad VCRC" % a.bad_vcrc if a.bad_vcrc else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
