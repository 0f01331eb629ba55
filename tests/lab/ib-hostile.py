#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
"""ib-hostile: the attacker of VM test 53 (a stateful hostile RC peer) over
native InfiniBand, from the host. cnuas-hostile's attacker crafts RoCEv2
frames on a guest's Ethernet netdev; an IB port has none. This one joins
the lab's IB switch as one more channel adapter, as tests/lab/ib-fuzz.py
does (the fake CA of userspace/vswitchd/test/ib_hca.py: an SMA the subnet
manager sweeps, gives a LID and makes Active), and sends each request as a
native IB frame from its LID to the victim's: LRH (VL 0, SL 0, LNH 2: no
GRH on the local subnet), BTH with the PSN the victim expects, the
extension headers, payload, ICRC and VCRC. It reads the victim's ACKs,
NAKs and READ responses addressed to its LID off the same switch port
(checking their VCRC and ICRC) while the CA's SMA keeps answering the SM.

The victim is cnuas-hostile in the guest (`cnuas-hostile -d cnuas_0`), with
its TCP side channel unchanged: the command after `--` has that channel
as its stdin and stdout, e.g. `scripts/lab exec 0 -- socat -
TCP:127.0.0.1:18740,retry=300,interval=0.2` (the host reaches an IB
lab's guests only through their agents).
We give the victim our LID and an all-zero GID, so it connects its QP by
LID with no GRH (tests/lab/verbs/common.c).

The cases, their expectations (IBA chapter 9.7) and the output are
cnuas-hostile's attacker's, so test 53 checks either the same way:
"CASE NAME: PASS ..." or "CASE NAME: FAIL ..."; exit 1 if any failed.

With --raw N (VM test 97: raw packets across partitions) there is no
victim and no side channel: from its LID the CA sends N raw packets (no
BTH, so no P_Key; LNH 0 with a raw header and LNH 1 with an IPv6 header
by turns; good PktLen and VCRC, no ICRC) to VICTIM_LID and to each -L
LID, then N ordinary ones to each (LNH 2: an RC SEND ONLY with the
default P_Key to QP 0xfffff0, which no guest QP has, so the guest counts it
in rx_drop_unknown_qpn), prints what it sent and exits: the switch must
drop every raw one and forward the others.

With --flood SECONDS (VM test 97: a strict-priority flood) there is no
victim either: the CA sends ordinary packets (LNH 2, an RC SEND ONLY of
--size bytes to QP 0xfffff0 again) at LRH SL --sl (default 7) to
VICTIM_LID as fast as the switch takes them, for SECONDS or until SIGUSR1,
prints how many, then keeps its port (its SMA answering the SM) until
SIGTERM or 120 s, so that the switch's counters of its port can be read.
Usage: ib-hostile.py SWITCH_SOCKET VICTIM_LID [CASE...] -- SIDE_CHANNEL_CMD [ARG...]
       ib-hostile.py SWITCH_SOCKET VICTIM_LID [-L LID...] --raw N
       ib-hostile.py SWITCH_SOCKET VICTIM_LID --flood SECONDS [--sl S] [--size BYTES]"""

import argparse
import os
import queue
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "userspace", "vswitchd", "test"))
import ib_hca  # noqa: E402
import ib_tests as T  # noqa: E402

# cnuas-hostile.c's constants: the victim derives its memory from them
MR_LEN = 65536
MTU = 256
IBV_MTU_256 = 1
FAKE_QPN_BASE = 0xc0de00
PATTERN_SEED = 0x5eed
M64 = (1 << 64) - 1

OP_SEND_ONLY_INV = 0x17
OP_WRITE_FIRST, OP_WRITE_LAST, OP_WRITE_ONLY, OP_WRITE_ONLY_IMM = 0x06, 0x08, 0x0a, 0x0b
OP_READ_REQ, OP_FETCH_ADD = 0x0c, 0x14
OP_READ_RESP_FIRST, OP_READ_RESP_LAST, OP_READ_RESP_ONLY = 0x0d, 0x0f, 0x10
OP_ACK, OP_ATOMIC_ACK = 0x11, 0x12

SYN_NAK_INVALID = 0x61
SYN_NAK_ACCESS = 0x62

CASES = ("read-noright", "atomic-noright", "write-long", "write-short", "write-zero",
         "addr-overflow", "read-after-inv", "dup-read-revoked", "send-inv-foreign",
         "write-imm-norecv", "dup-read-inv")
CMD_REPORT, CMD_INVALIDATE, CMD_POST_RECV = 1, 2, 3
CMD_END = 0xFFFFFFFF

# --raw: the LRH's next-header values without a BTH (the switch's
# CNUAS_LNH_RAW and CNUAS_LNH_IP), and the control's QP: guests number
# their QPs up from the low ones
LNH_RAW, LNH_IP = 0, 1
OP_SEND_ONLY = 0x04
RAW_CONTROL_QPN = 0xfffff0

# libibverbs' values and strings, for the report
QPS = ("RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR")
QPS_RTS, QPS_ERR = 3, 6
EV_QP_REQ_ERR, EV_QP_ACCESS_ERR = 2, 3
EV_STR = {1: "local work queue catastrophic error", 2: "invalid request local work queue error",
          3: "local access violation work queue error"}
WC_SUCCESS, WC_REM_INV_REQ_ERR = 0, 9
WC_RECV_RDMA_WITH_IMM = 129
WC_STR = ("success", "local length error", "local QP operation error",
          "local EE context operation error", "local protection error",
          "Work Request Flushed Error", "memory management operation error",
          "bad response error", "local access error", "remote invalid request error",
          "remote access error", "remote operation error", "transport retry counter exceeded",
          "RNR retry counter exceeded")


def wc_str(s):
    return WC_STR[s] if 0 <= s < len(WC_STR) else "status %d" % s


def ev_str(e):
    return "none" if e < 0 else EV_STR.get(e, "event %d" % e)


# ---- the victim's memory patterns (common.c's vt_fill, cnuas-hostile's buf_sum)

def vt_fill(n, seed, stream):
    s = (((seed ^ 0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9) & M64) ^ \
        (((stream + 1) * 0x94D049BB133111EB) & M64)
    s = s or 1
    out = bytearray()
    while len(out) < n:
        s ^= s >> 12
        s = (s ^ (s << 25)) & M64
        s ^= s >> 27
        out += struct.pack("<Q", (s * 0x2545F4914F6CDD1D) & M64)
    return bytes(out[:n])


def buf_sum(b):
    h = 1469598103934665603
    for x in b:
        h = ((h ^ x) * 1099511628211) & M64
    return h


# ---- the wire


class Rx:
    pass


class Fabric:
    """Our CA on the switch: requests out, the victim's answers in."""

    def __init__(self, path, dlid, timeout):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.connect(path)
        self.ca = ib_hca.CA(self.s, 0x02c5f0530000_0000 | random.getrandbits(16), "ib-hostile")
        self.dlid = dlid
        self.q = queue.Queue()
        self.bad_crc = 0
        self.grh = 0            # answers with a GRH (LNH 3)
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.reader, daemon=True)
        self.t.start()
        t0 = time.time()
        if not ib_hca.wait_for(lambda: self.ca.state == 4 and self.ca.lid, timeout):
            raise SystemExit("ib-hostile: error: the SM did not make the port Active in %d s "
                             "(state %d, LID %d)" % (timeout, self.ca.state, self.ca.lid))
        self.lid = self.ca.lid
        print("ib-hostile: port Active after %.1f s, LID %d; victim LID %d"
              % (time.time() - t0, self.lid, dlid), flush=True)

    def reader(self):
        # management (VL15 SMPs, GSI MADs to QP1) to the CA's SMA, the rest
        # (the victim's transport packets) to the attacker
        while not self.stop.is_set():
            r, _, _ = select.select([self.s], [], [], 0.1)
            if not r:
                continue
            try:
                f = self.s.recv(65536)
            except OSError:
                return
            if not f:
                return
            if len(f) < 8 + 12 + 4 + 2:
                continue
            lnh = f[1] & 3
            if f[0] >> 4 == 15 or (lnh == 2 and struct.unpack_from("!I", f, 12)[0] & 0xFFFFFF in (0, 1)):
                try:
                    self.ca.on_frame(f)
                except (IndexError, struct.error):
                    pass        # a short MAD: the SMA must keep answering the SM
            elif lnh in (2, 3):
                self.q.put(f)

    def close(self):
        self.stop.set()
        self.t.join(1)
        self.s.close()

    def frame(self, dqpn, op, psn, ext=b"", pay=b"", dlid=None, sl=0):
        pad = -len(pay) % 4
        bth = struct.pack("!BBHII", op, pad << 4, 0xFFFF, dqpn & 0xFFFFFF,
                          1 << 31 | (psn & 0xFFFFFF))          # AckReq
        n = 8 + 12 + len(ext) + len(pay) + pad + 4
        lrh = struct.pack("!BBHHH", 0, sl << 4 | 2, dlid or self.dlid, n // 4, self.lid)  # VL 0, LNH 2
        body = lrh + bth + ext + pay + b"\0" * pad
        f = body + struct.pack("<I", T.icrc(body, 2))
        return f + struct.pack("<H", T.vcrc(f))

    def send(self, dqpn, op, psn, ext=b"", pay=b"", dlid=None):
        self.s.send(self.frame(dqpn, op, psn, ext, pay, dlid))

    def recv(self, qpn, timeout):
        """The next transport packet of the victim to QP qpn; None: none."""
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if left <= 0:
                return None
            try:
                f = self.q.get(timeout=left)
            except queue.Empty:
                return None
            n = (struct.unpack_from("!H", f, 4)[0] & 0x7FF) * 4
            lnh = f[1] & 3
            b = 8 if lnh == 2 else 48
            if n < b + 12 + 4 or len(f) < n + 2 or struct.unpack_from("!H", f, 6)[0] != self.dlid:
                continue
            if struct.unpack_from("<H", f, n)[0] != T.vcrc(f[:n]) or \
                    struct.unpack_from("<I", f, n - 4)[0] != T.icrc(f[:n - 4], lnh):
                self.bad_crc += 1
                continue
            op, flags, _, dqp, psn = struct.unpack_from("!BBHII", f, b)
            if dqp & 0xFFFFFF != qpn:
                continue
            self.grh += lnh == 3
            r = Rx()
            r.op, r.psn, r.syn, r.msn = op, psn & 0xFFFFFF, 0xFF, 0
            p = b + 12
            if op in (OP_ACK, OP_ATOMIC_ACK, OP_READ_RESP_FIRST, OP_READ_RESP_LAST, OP_READ_RESP_ONLY):
                r.syn = f[p]
                r.msn = struct.unpack_from("!I", f, p)[0] & 0xFFFFFF
                p += 4
            if op == OP_ATOMIC_ACK:
                p += 8
            end_p = n - 4
            r.pay = f[p:end_p - ((flags >> 4) & 3)] if end_p > p else b""
            return r


class Side:
    """The victim's TCP side channel, through a command's stdin and stdout."""

    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  bufsize=0)
        self.fd = self.p.stdout.fileno()

    def write(self, b):
        try:
            self.p.stdin.write(b)
            self.p.stdin.flush()
        except OSError as e:
            raise SystemExit("ib-hostile: error: the side channel went away (%s)" % e)

    def read(self, n, timeout):
        out = b""
        end = time.time() + timeout
        while len(out) < n:
            left = end - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                d = os.read(self.fd, n - len(out))
                if not d:
                    return None
                out += d
        return out

    def send_word(self, w):
        self.write(struct.pack("!Q", w & M64))

    def recv_word(self, timeout, what):
        b = self.read(8, timeout)
        if b is None:
            raise SystemExit("ib-hostile: error: %s" % what)
        return struct.unpack("!Q", b)[0]

    # struct vt_peer: qpn psn rkey mtu lid resv, addr, arg[4], gid[16]
    def send_peer(self, qpn=0, psn=0, rkey=0, mtu=0, lid=0, addr=0, arg=(0, 0, 0, 0), gid=bytes(16)):
        self.write(struct.pack("!6IQ4Q16s", qpn, psn, rkey, mtu, lid, 0, addr, *arg, gid))

    def recv_peer(self, timeout):
        b = self.read(80, timeout)
        if b is None:
            raise SystemExit("ib-hostile: error: side channel: no QP details from the victim "
                             "within %d s" % timeout)
        v = struct.unpack("!6IQ4Q16s", b)
        return {"qpn": v[0], "psn": v[1], "rkey": v[2], "mtu": v[3], "lid": v[4],
                "addr": v[6], "arg": v[7:11]}

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def syn_name(s):
    if s == 0xFF:
        return "none"
    if s >> 5 == 0:
        return "ACK"
    if s >> 5 == 1:
        return "RNR NAK timer %d" % (s & 0x1F)
    if s >> 5 == 3 and (s & 0x1F) <= 4:
        return ("NAK PSN sequence error", "NAK invalid request", "NAK remote access error",
                "NAK remote operational error", "NAK invalid RD request")[s & 0x1F]
    return "syndrome 0x%02x" % s


def reth(va, rkey, length):
    return struct.pack("!QII", va & M64, rkey, length)


class Attacker:
    def __init__(self, fab, side):
        self.fab = fab
        self.side = side
        self.fails = 0

    def check(self, cond, msg):
        if not cond:
            self.why.append(msg)

    def tx(self, op, psn, ext=b"", pay=b""):
        self.fab.send(self.qpn, op, psn, ext, pay)

    def rx(self, timeout):
        return self.fab.recv(self.fake_qpn, timeout)

    def wait_ack(self, timeout):
        """An ACK-type answer (ACK/NAK, atomic ACK, a READ response's first)."""
        end = time.time() + timeout
        while time.time() < end:
            r = self.rx(end - time.time())
            if r and r.op in (OP_ACK, OP_ATOMIC_ACK, OP_READ_RESP_ONLY, OP_READ_RESP_FIRST):
                return r
        return None

    def expect_nak(self, psn, syn, what):
        r = self.wait_ack(5)
        if r is None:
            self.check(False, "%s: no answer (want %s)" % (what, syn_name(syn)))
            return
        self.check(r.op == OP_ACK and r.syn == syn and r.psn == psn,
                   "%s: got opcode 0x%02x %s PSN %d, want %s PSN %d"
                   % (what, r.op, syn_name(r.syn), r.psn, syn_name(syn), psn))
        if r.op == OP_ACK and r.syn >> 5 == 0:
            self.psn = (r.psn + 1) & 0xFFFFFF

    def report(self):
        self.side.send_word(CMD_REPORT)
        w = [self.side.recv_word(30, "no report from the victim") for _ in range(5)]
        return {"have_wc": (w[0] & 0xFFFF) != 0xFFFF, "wc_status": w[0] & 0xFF,
                "wc_opcode": (w[0] >> 8) & 0xFF, "byte_len": (w[0] >> 16) & 0xFFFF,
                "imm": w[0] >> 32, "async": -1 if (w[1] & 0xFFFF) == 0xFFFF else w[1],
                "qp_state": w[2], "mr_sum": w[3], "recv_sum": w[4]}

    def invalidate(self):
        self.side.send_word(CMD_INVALIDATE)
        st = self.side.recv_word(30, "no answer to the invalidation")
        self.check(st == WC_SUCCESS, "LOCAL_INV of the window: %s" % wc_str(st))

    def read_window(self, v, k, psn):
        """READ 64 bytes through the victim's type 2 window (its rkey and
        address in arg[2], arg[3]); returns the RETH for a duplicate."""
        want = vt_fill(4096, PATTERN_SEED, 100 + k)[:64]
        ext = reth(v["arg"][3], v["arg"][2] & 0xFFFFFFFF, 64)
        self.tx(OP_READ_REQ, psn, ext)
        r = self.wait_ack(5)
        if r is None:
            self.check(False, "READ through the window: no response")
        else:
            self.check(r.op == OP_READ_RESP_ONLY and r.psn == psn and r.pay == want,
                       "READ through the window: opcode 0x%02x %s PSN %d, %d bytes%s"
                       % (r.op, syn_name(r.syn), r.psn, len(r.pay),
                          " (wrong data)" if len(r.pay) == 64 and r.pay != want else ""))
        return ext

    def qp_is(self, rp, state):
        self.check(rp["qp_state"] == state, "victim QP %s, want %s"
                   % (QPS[rp["qp_state"]] if rp["qp_state"] < len(QPS) else "?", QPS[state]))

    def async_is(self, rp, ev, what):
        self.check(rp["async"] == ev, "victim async event %d, want %s" % (rp["async"], what))

    def case(self, k):
        name = CASES[k - 1]
        self.why = []
        bad0, grh0 = self.fab.bad_crc, self.fab.grh
        self.side.send_word(k)
        self.fake_qpn = FAKE_QPN_BASE + k
        self.psn = (0x1000 * k + 0xfff00) & 0xFFFFFF
        # our "QP": a QPN, a PSN, our LID and no GID (no GRH on the subnet)
        self.side.send_peer(qpn=self.fake_qpn, psn=self.psn, mtu=IBV_MTU_256, lid=self.fab.lid)
        v = self.side.recv_peer(30)
        self.qpn = v["qpn"]
        p0 = self.psn
        pay = b"\xa5" * MTU
        mr0 = buf_sum(vt_fill(MR_LEN, PATTERN_SEED, k))
        rp = {"qp_state": -1, "async": -1, "have_wc": False}

        if name == "read-noright":
            self.tx(OP_READ_REQ, p0, reth(v["addr"], v["rkey"], 64))
            self.expect_nak(p0, SYN_NAK_ACCESS, "READ")
            rp = self.report()
            self.qp_is(rp, QPS_ERR)
            self.async_is(rp, EV_QP_ACCESS_ERR, "QP access error")
        elif name == "atomic-noright":
            self.tx(OP_FETCH_ADD, p0, struct.pack("!QIQQ", v["addr"], v["rkey"], 1, 0))
            self.expect_nak(p0, SYN_NAK_ACCESS, "FETCH_ADD")
            rp = self.report()
            self.qp_is(rp, QPS_ERR)
            self.async_is(rp, EV_QP_ACCESS_ERR, "QP access error")
            self.check(rp["mr_sum"] == mr0, "the victim's memory changed")
        elif name == "write-long":
            self.tx(OP_WRITE_ONLY, p0, reth(v["addr"], v["rkey"], 32), pay[:64])
            self.expect_nak(p0, SYN_NAK_INVALID, "WRITE ONLY 64 bytes, RETH 32")
            rp = self.report()
            self.qp_is(rp, QPS_ERR)
            self.async_is(rp, EV_QP_REQ_ERR, "QP request error")
        elif name == "write-short":
            self.tx(OP_WRITE_FIRST, p0, reth(v["addr"], v["rkey"], 2 * MTU), pay)
            r = self.wait_ack(5)
            if r is None or r.op != OP_ACK or r.syn >> 5 or r.psn != p0:
                self.check(False, "WRITE FIRST: no ACK of PSN %d" % p0)
            else:
                self.psn = (r.psn + 1) & 0xFFFFFF
            self.tx(OP_WRITE_LAST, self.psn, b"", pay[:MTU // 2])
            self.expect_nak((p0 + 1) & 0xFFFFFF, SYN_NAK_INVALID, "WRITE LAST with half the rest")
            rp = self.report()
            self.qp_is(rp, QPS_ERR)
            self.async_is(rp, EV_QP_REQ_ERR, "QP request error")
        elif name == "write-zero":
            self.tx(OP_WRITE_ONLY, p0, reth(0xdead0000beef, 0xbadbad, 0))
            r = self.wait_ack(5)     # any credit count: an ACK
            if r is None:
                self.check(False, "zero-length WRITE, bogus rkey: no answer (want ACK)")
            else:
                self.check(r.op == OP_ACK and r.syn >> 5 == 0 and r.psn == p0,
                           "zero-length WRITE, bogus rkey: opcode 0x%02x %s PSN %d, want ACK PSN %d"
                           % (r.op, syn_name(r.syn), r.psn, p0))
            rp = self.report()
            self.qp_is(rp, QPS_RTS)
            self.async_is(rp, -1, "none")
            self.check(rp["mr_sum"] == mr0, "the victim's memory changed")
        elif name == "addr-overflow":
            self.tx(OP_WRITE_ONLY, p0, reth(0xffffffffffffffc0, v["rkey"], 128), pay[:128])
            self.expect_nak(p0, SYN_NAK_ACCESS, "WRITE at 2^64 - 64, 128 bytes")
            rp = self.report()
            self.qp_is(rp, QPS_ERR)
            self.check(rp["mr_sum"] == mr0, "the victim's memory changed")
        elif name == "read-after-inv":
            self.invalidate()
            self.tx(OP_READ_REQ, p0, reth(v["arg"][3], v["arg"][2] & 0xFFFFFFFF, 64))
            r = self.wait_ack(5)
            if r is None:
                self.check(False, "READ through the invalidated window: no answer")
            else:
                self.check(r.op == OP_ACK and r.syn == SYN_NAK_ACCESS and r.psn == p0,
                           "READ through the invalidated window: opcode 0x%02x %s PSN %d (%d bytes), "
                           "want NAK remote access error PSN %d"
                           % (r.op, syn_name(r.syn), r.psn, len(r.pay), p0))
            rp = self.report()
            self.qp_is(rp, QPS_ERR)
            self.async_is(rp, EV_QP_ACCESS_ERR, "QP access error")
        elif name == "dup-read-revoked":
            ext = self.read_window(v, k, p0)
            self.invalidate()
            # the same request again: a duplicate the responder must not serve
            self.tx(OP_READ_REQ, p0, ext)
            r = self.wait_ack(5)
            if r is None:
                self.check(False, "duplicate READ after the invalidation: no answer")
            else:
                self.check(r.op == OP_ACK and r.syn == SYN_NAK_ACCESS and r.psn == p0,
                           "duplicate READ after the invalidation: opcode 0x%02x %s PSN %d (%d bytes), "
                           "want NAK remote access error PSN %d"
                           % (r.op, syn_name(r.syn), r.psn, len(r.pay), p0))
            rp = self.report()
            self.qp_is(rp, QPS_ERR)
        elif name == "dup-read-inv":
            want = vt_fill(4096, PATTERN_SEED, 100 + k)[:64]
            p1 = (p0 + 1) & 0xFFFFFF
            ext = self.read_window(v, k, p0)
            # the READ again and, in the same burst, the SEND that releases the window
            self.tx(OP_READ_REQ, p0, ext)
            self.tx(OP_SEND_ONLY_INV, p1, struct.pack("!I", v["arg"][2] & 0xFFFFFFFF), pay[:16])
            resp = acked = other = 0
            end = time.time() + 5
            while not acked and time.time() < end:
                r = self.rx(end - time.time())
                if r is None:
                    continue
                if r.op == OP_READ_RESP_ONLY and r.psn == p0 and r.pay == want:
                    resp += 1
                elif r.op == OP_ACK and r.syn >> 5 == 0 and r.psn == p1:
                    acked = 1
                elif r.op in (OP_ACK, OP_READ_RESP_ONLY):
                    other += 1
            self.check(acked and not other,
                       "READ replay and SEND with Invalidate: %s, %d other answers (want the SEND "
                       "ACKed, no NAK)" % ("SEND ACKed" if acked else "no ACK of the SEND", other))
            self.check(resp <= 1, "the READ replayed %d times" % resp)
            rp = self.report()
            self.check(rp["have_wc"] and rp["wc_status"] == WC_SUCCESS and rp["byte_len"] == 16,
                       "victim receive: %s, %d bytes"
                       % (wc_str(rp["wc_status"]) if rp["have_wc"] else "none", rp["byte_len"]))
            self.qp_is(rp, QPS_RTS)
        elif name == "send-inv-foreign":
            self.tx(OP_SEND_ONLY_INV, p0, struct.pack("!I", v["arg"][0] & 0xFFFFFFFF), pay[:16])
            self.expect_nak(p0, SYN_NAK_INVALID, "SEND with Invalidate of another PD's rkey")
            rp = self.report()
            self.check(rp["have_wc"] and rp["wc_status"] == WC_REM_INV_REQ_ERR,
                       "receive completion %s, want remote invalid request error"
                       % (wc_str(rp["wc_status"]) if rp["have_wc"] else "none"))
            self.qp_is(rp, QPS_ERR)
        elif name == "write-imm-norecv":
            timer = v["arg"][1]
            ext = reth(v["addr"] + 4096, v["rkey"], 64) + struct.pack("!I", 0x1234abcd)
            self.tx(OP_WRITE_ONLY_IMM, p0, ext, pay[:64])
            self.expect_nak(p0, 0x20 | (timer & 0x1F), "WRITE with immediate, no receive")
            # the RNR wait: the owner posts a receive; the retry goes through
            self.side.send_word(CMD_POST_RECV)
            self.side.recv_word(30, "no answer to the receive post")
            self.tx(OP_WRITE_ONLY_IMM, p0, ext, pay[:64])
            r = self.wait_ack(5)
            if r is None:
                self.check(False, "retry after the receive: no answer")
            else:
                self.check(r.op == OP_ACK and r.syn >> 5 == 0 and r.psn == p0,
                           "retry after the receive: %s PSN %d, want ACK PSN %d"
                           % (syn_name(r.syn), r.psn, p0))
            rp = self.report()
            self.check(rp["have_wc"] and rp["wc_status"] == WC_SUCCESS and
                       rp["wc_opcode"] == WC_RECV_RDMA_WITH_IMM and rp["byte_len"] == 64 and
                       rp["imm"] == 0x1234abcd,
                       "receive completion %s opcode %d len %d imm 0x%x, want success "
                       "RECV_RDMA_WITH_IMM 64 0x1234abcd"
                       % (wc_str(rp["wc_status"]) if rp["have_wc"] else "none", rp["wc_opcode"],
                          rp["byte_len"], rp["imm"]))
            self.qp_is(rp, QPS_RTS)
            self.check(rp["mr_sum"] != mr0, "the retried WRITE did not land")
        # an answer of the victim with a bad VCRC or ICRC: its device or
        # the switch mangled it
        self.check(self.fab.bad_crc == bad0, "%d answer(s) of the victim with a bad VCRC or ICRC"
                   % (self.fab.bad_crc - bad0))
        # we gave no GID: the victim's QP addresses us by LID alone
        self.check(self.fab.grh == grh0, "%d answer(s) of the victim with a GRH (LNH 3), want LRH only"
                   % (self.fab.grh - grh0))
        if self.why:
            self.fails += 1
            print("CASE %s: FAIL %s" % (name, "; ".join(self.why)), flush=True)
        else:
            qs = rp["qp_state"]
            print("CASE %s: PASS (victim QP %s, async event %s, receive completion %s)"
                  % (name, QPS[qs] if 0 <= qs < len(QPS) else "?", ev_str(rp["async"]),
                     wc_str(rp["wc_status"]) if rp["have_wc"] else "none"), flush=True)


def raw_payload(lnh, k):
    """What follows the LRH of the k-th raw packet: a raw header (reserved,
    EtherType IPv6) and bytes, or an IPv6 header (UDP, link-local
    addresses) and a UDP datagram; 56 bytes either way."""
    if lnh == LNH_RAW:
        return struct.pack("!HH", 0, 0x86DD) + struct.pack("!I", k) * 13
    udp = struct.pack("!HHHH", 4791, 4791, 16, 0) + struct.pack("!Q", k)
    src, dst = b"\xfe\x80" + bytes(13) + b"\x01", b"\xfe\x80" + bytes(13) + b"\x02"
    return struct.pack("!IHBB", 6 << 28, len(udp), 17, 64) + src + dst + udp


def send_raw(fab, dlids, n):
    """--raw: n raw packets to each LID, then n ordinary ones to each."""
    for dlid in dlids:
        lnhs = [k % 2 for k in range(n)]
        for k, lnh in enumerate(lnhs):
            fab.s.send(T._raw(dlid, fab.lid, raw_payload(lnh, k), lnh))
        time.sleep(0.05)         # the SMA thread answers the SM between bursts
        for k in range(n):
            fab.send(RAW_CONTROL_QPN, OP_SEND_ONLY, k, pay=struct.pack("!Q", k), dlid=dlid)
        time.sleep(0.05)
        print("ib-hostile: raw: from LID %d to LID %d: %d raw (LNH 0: %d, LNH 1: %d), then %d "
              "ordinary (LNH 2, RC SEND ONLY to QP 0x%x)"
              % (fab.lid, dlid, n, lnhs.count(LNH_RAW), lnhs.count(LNH_IP), n, RAW_CONTROL_QPN),
              flush=True)


def flood(fab, seconds, sl, size):
    """--flood: one packet at SL sl to the victim, again and again; the
    switch pauses this port when the victim's queue is full (lossless), so
    wait for room instead of blocking the SMA thread's answers."""
    stop = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: stop.set())
    f = fab.frame(RAW_CONTROL_QPN, OP_SEND_ONLY, 0, pay=b"\x5a" * size, sl=sl)
    print("ib-hostile: flood: from LID %d to LID %d at SL %d, %d-byte frames"
          % (fab.lid, fab.dlid, sl, len(f)), flush=True)
    n = 0
    t0 = time.time()
    end = t0 + seconds
    while not stop.is_set() and (n & 63 or time.time() < end):
        try:
            fab.s.send(f, socket.MSG_DONTWAIT)
            n += 1
        except BlockingIOError:
            select.select([], [fab.s], [], 0.05)
    print("ib-hostile: flood: sent %d packets (%d bytes) at SL %d in %.1f s"
          % (n, n * len(f), sl, time.time() - t0), flush=True)
    # hold the port: its counters go with it
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait(120)


def main():
    argv = sys.argv[1:]
    if "--" not in argv and "--raw" not in argv and "--flood" not in argv:
        print(__doc__[__doc__.index("Usage:"):], file=sys.stderr)
        return 2
    i = argv.index("--") if "--" in argv else len(argv)
    argv, side_cmd = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description="cnuas-hostile's attacker over native IB",
                                epilog="after --: the command whose stdin/stdout is the "
                                       "victim's TCP side channel")
    p.add_argument("switch", help="the lab's IB switch socket ($LAB_DIR/switch.sock)")
    p.add_argument("dlid", type=lambda s: int(s, 0), help="the victim port's LID")
    p.add_argument("cases", nargs="*", help="cases to run (default: all)")
    p.add_argument("-T", dest="timeout", type=float, default=180,
                   help="seconds to wait for the SM to make the port Active")
    p.add_argument("--raw", type=int, metavar="N",
                   help="send N raw and N ordinary packets to each LID, no victim")
    p.add_argument("-L", dest="lids", action="append", default=[], type=lambda s: int(s, 0),
                   help="with --raw: one more LID to send to")
    p.add_argument("--flood", type=float, metavar="SECONDS",
                   help="send to the victim's LID as fast as the switch takes it, no victim")
    p.add_argument("--sl", type=int, default=7, help="with --flood: the packets' SL (0..15)")
    p.add_argument("--size", type=int, default=2048, help="with --flood: payload bytes")
    a = p.parse_intermixed_args(argv)
    if a.flood is not None:
        if side_cmd or a.cases or a.lids or a.raw is not None or a.flood <= 0 or \
                not 0 <= a.sl <= 15 or not 0 <= a.size <= 4096:
            p.error("--flood SECONDS (> 0) [--sl 0..15] [--size 0..4096] takes nothing else")
        fab = Fabric(a.switch, a.dlid, a.timeout)
        try:
            flood(fab, a.flood, a.sl, a.size)
        finally:
            fab.close()
        return 0
    if a.raw is not None:
        if side_cmd or a.cases or a.raw < 1:
            p.error("--raw N (N > 0) takes no cases and no side channel")
        fab = Fabric(a.switch, a.dlid, a.timeout)
        try:
            send_raw(fab, [a.dlid] + a.lids, a.raw)
        finally:
            fab.close()
        return 0
    if a.lids:
        p.error("-L goes with --raw")
    if not side_cmd:
        p.error("no side channel command after --")
    for c in a.cases:
        if c not in CASES:
            p.error("unknown case %s (cases: %s)" % (c, " ".join(CASES)))
    fab = Fabric(a.switch, a.dlid, a.timeout)
    side = Side(side_cmd)
    att = Attacker(fab, side)
    try:
        for k, name in enumerate(CASES, 1):
            if not a.cases or name in a.cases:
                att.case(k)
        side.send_word(CMD_END)
    finally:
        side.close()
        fab.close()
    print("ib-hostile: %d case(s) failed" % att.fails)
    return 1 if att.fails else 0


if __name__ == "__main__":
    sys.exit(main())
