# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
"""Fake channel adapters on an IB-mode switch port, for host tests.

CA: one port of a one-port HCA on a switch socket, with the SMA an HCA's
driver has (NodeInfo, NodeDescription, PortInfo Get/Set with Init -> Armed
-> Active, GUIDInfo, P_KeyTable, SLtoVL, VLArbitration) and ib_core's
directed-route handling for an end node (kernel smi.c for a CA).

SimServer: lets a stock OpenSM (or infiniband-diags) run on such a CA
through ibsim's libumad2sim.so, which stands in for /dev/infiniband/umad*
and sysfs and talks the ibsim protocol over abstract unix sockets
(include/ibsim.h: sim_ctl on <name>:ctl, sim_request on <name>:out<id>).
Only the protocol is shared with ibsim; the node behind it is ours.
"""

import os
import select
import socket
import struct
import threading
import time

import ib_tests as T

PERM = 0xFFFF


class CA:
    def __init__(self, sock, guid, desc, sm=False):
        self.s = sock
        self.guid = guid
        self.desc = desc
        self.sm = sm
        self.lid = 0
        self.smlid = 0
        self.lmc = 0
        self.mkey = 0
        self.gidprefix = 0xfe80000000000000
        self.state = 2          # Init: the switch port is up
        self.nmtu = 5
        self.opvls = 1
        self.pkeys = [0xFFFF] + [0] * 31
        self.to_sm = None       # OpenSM's delivery function, if any
        self.log = []

    # ---- the SMA ----
    def node_info(self):
        d = bytearray(64)
        d[0:4] = bytes([1, 1, 1, 1])          # base, class version, CA, 1 port
        struct.pack_into("!QQQHH", d, 4, self.guid, self.guid, self.guid + 1, 64, 0xc5a6)
        struct.pack_into("!I", d, 32, 1)
        d[36] = 1                               # LocalPortNum
        return d

    def port_info(self):
        d = bytearray(64)
        cap = 0x00010848 | (0x2 if self.sm else 0)   # CM, SysImageGUID, SL map, traps, IsSM
        struct.pack_into("!QQHHI", d, 0, self.mkey, self.gidprefix, self.lid, self.smlid, cap)
        d[28] = 1
        d[29], d[30], d[31] = 3, 3, 2
        d[32] = 7 << 4 | self.state
        d[33] = 5 << 4 | 2
        d[34] = self.lmc
        d[35] = 4 << 4 | 7
        d[36] = self.nmtu << 4
        d[37] = 1 << 4
        d[39], d[40] = 8, 8
        d[41] = 5
        d[42] = 16
        d[43] = self.opvls << 4
        d[50] = 1
        return d

    def set_port_info(self, d):
        ns = d[32] & 15
        if ns == 2 or (ns == 3 and self.state not in (2, 3)) or \
                (ns == 4 and self.state not in (3, 4)):
            return 0x1C
        self.mkey, self.gidprefix, self.lid, self.smlid = struct.unpack_from("!QQHH", d, 0)
        self.lmc = d[34] & 7
        if d[36] >> 4:
            self.nmtu = d[36] >> 4
        if d[43] >> 4:
            self.opvls = d[43] >> 4
        if ns == 1:
            self.state = 2
        elif ns:
            self.state = ns
        return 0

    def sma(self, m):
        """Answer the SMP m (bytearray, 256) in place; False: not for the SMA."""
        method = m[3]
        attr, = struct.unpack_from("!H", m, 16)
        mod, = struct.unpack_from("!I", m, 20)
        if method & 0x80 or method == 0x07:
            return False
        if method not in (1, 2):
            status = 0x08
        else:
            status = 0
            data = bytes(m[64:128])
            if attr == 0x11 and method == 1:
                m[64:128] = self.node_info()
            elif attr == 0x10 and method == 1:
                m[64:128] = self.desc.encode().ljust(64, b"\0")
            elif attr == 0x15 and mod in (0, 1):
                if method == 2:
                    status = self.set_port_info(data)
                m[64:128] = self.port_info()
            elif attr == 0x14 and method == 1:
                m[64:128] = struct.pack("!Q", self.guid + 1).ljust(64, b"\0")
            elif attr == 0x16:
                if method == 2:
                    self.pkeys = list(struct.unpack("!32H", data))
                m[64:128] = struct.pack("!32H", *self.pkeys)
            elif attr in (0x17, 0x18):
                pass
            else:
                status = 0x0C
        m[3] = 0x81
        d = 0x8000 if m[1] == 0x81 else 0
        struct.pack_into("!H", m, 4, d | status)
        return True

    # ---- the wire ----
    def send(self, mad, dlid, slid, vl=15, dqp=0, sqp=0, qkey=0):
        self.s.send(T.ib_frame(bytes(mad), dlid, slid, vl=vl, dqp=dqp, sqp=sqp, qkey=qkey))

    def from_sm(self, mad, dlid, dqp, sqp):
        """A MAD OpenSM sends (ib_core's send side)."""
        m = bytearray(mad)
        cls = m[1]
        if cls == 0x81:
            hp, hc = m[6], m[7]
            back = m[4] & 0x80
            if hc == 0 or (not back and hp == hc + 1):
                self.local(m, None)
                return
            if not back and hp == 0:
                if struct.unpack_from("!H", m, 32)[0] != PERM:
                    # DrSLID set: LID-routed to the DR part's first node as it is
                    self.send(m, dlid, self.lid or PERM)
                    return
                m[6] = 1                          # C14-9:1
                if m[128 + 1] != 1:
                    return
            elif back and hp == hc + 1:
                m[6] = hc                          # answering as the DR's end
            slid = self.lid if self.lid else PERM
            self.send(m, PERM, PERM if dlid == PERM else slid)
            return
        if cls == 0x01:
            if dlid in (self.lid, PERM) and self.lid:
                self.local(m, None)
                return
            self.send(m, dlid, self.lid or PERM)
            return
        self.send(m, dlid, self.lid, vl=0, dqp=dqp, sqp=sqp, qkey=0x80010000)

    def local(self, m, reply_to):
        if m[3] & 0x80 or m[3] in (0x05, 0x06):
            if self.to_sm:
                self.to_sm(m, self.lid, 0)
            return
        if struct.unpack_from("!H", m, 16)[0] == 0x20 and self.sm and self.to_sm:
            self.to_sm(m, reply_to or self.lid, 0)     # SMInfo: for the SM here
            return
        if not self.sma(m):
            return
        if self.to_sm and reply_to is None:
            self.to_sm(m, self.lid, 0)                 # answered without the wire
            return
        if m[1] == 0x81:
            hc = m[7]
            m[6] = hc                                  # C14-13:1 on sending it back
            self.send(m, PERM, PERM)
        else:
            self.send(m, reply_to, self.lid or PERM)

    def on_frame(self, f):
        L = T.lrh(f)
        if self.lid and L["dlid"] != PERM and \
                not self.lid <= L["dlid"] < self.lid + (1 << self.lmc):
            return                                          # not for this port
        m = bytearray(f[28:28 + 256])
        dqp = struct.unpack_from("!I", f, 12)[0] & 0xFFFFFF
        sqp = struct.unpack_from("!I", f, 24)[0] & 0xFFFFFF
        self.log.append((L["vl"], m[1], m[3], struct.unpack_from("!H", m, 16)[0]))
        if L["vl"] == 15:
            if m[1] == 0x81:
                hp, hc = m[6], m[7]
                if m[4] & 0x80:
                    if hp == 1 and self.to_sm:              # C14-13:3 -> the SM
                        m[6] = 0
                        self.to_sm(m, PERM, 0)
                    elif hp == 0 and self.to_sm:            # C14-13:4: LID-routed back
                        self.to_sm(m, L["slid"], 0)
                    return
                if hp != hc:
                    return
                m[192 + hp] = 1                             # C14-9:3
                m[6] = hp + 1
                self.local(m, PERM)
                return
            if m[3] & 0x80 or m[3] in (0x05,):
                if self.to_sm:
                    self.to_sm(m, L["slid"], 0)
                return
            self.local(m, L["slid"])
            return
        if dqp == 1 and self.to_sm:
            self.to_sm(m, L["slid"], sqp)

    def run(self, stop):
        while not stop.is_set():
            r, _, _ = select.select([self.s], [], [], 0.1)
            if r:
                try:
                    f = self.s.recv(65536)
                except OSError:
                    return
                if not f:
                    return
                self.on_frame(f)


class SimServer:
    """ibsim's server protocol for one CA (the SM's), on abstract sockets."""

    MAGIC = 0xDEADBEEF

    def __init__(self, ca, name):
        self.ca = ca
        self.name = name
        self.ctl = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.ctl.bind(self.addr("ctl"))
        self.out = {}
        self.client_in = {}
        ca.to_sm = self.deliver
        self.lock = threading.Lock()

    def addr(self, what):
        # libumad2sim's abstract names keep vsnprintf's terminating NUL
        return ("\0%s:%s\0" % (self.name, what)).encode()

    def deliver(self, mad, slid, sqp):
        req = struct.pack("!H", PERM) + bytes(2) + struct.pack("!H", slid) + bytes(2) \
            + struct.pack("!II", 0, sqp) + struct.pack("!I", 0) + bytes(4) \
            + struct.pack("!Q", 256) + bytes(mad)
        # to the newest client (a diagnostic tool started while OpenSM idles)
        for cid in sorted(self.out, reverse=True):
            try:
                self.out[cid].sendto(req, self.client_in[cid])
                return
            except OSError:
                pass

    def on_ctl(self):
        data, addr = self.ctl.recvfrom(1024)
        magic, cid, typ, ln = struct.unpack_from("=IIII", data, 0)
        body = bytearray(data[16:16 + 64])
        if typ == 1:                       # CONNECT: sim_client_info
            pid, qp, issm = struct.unpack_from("=III", body, 0)
            cid = len(self.out) + 1
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.bind(self.addr("out%d" % cid))
            self.out[cid] = s
            self.client_in[cid] = self.addr("in%d" % pid)
            struct.pack_into("=I", body, 0, cid)
            body[12:44] = b"cnuas-sm-ca".ljust(32, b"\0")
        elif typ == 4:                     # GET_VENDOR
            body[0:24] = struct.pack("=IIIxxxxQ", 0x2c5, 0xc5a6, 1, 1)[:24]
        elif typ == 7:                     # GET_NODEINFO
            body[0:64] = self.ca.node_info()
        elif typ == 8:                     # GET_PORTINFO
            body[0:64] = self.ca.port_info()
        elif typ == 10:                    # GET_PKEYS
            body[0:64] = struct.pack("!32H", *self.ca.pkeys)
        elif typ == 9:                     # SET_ISSM
            self.ca.sm = bool(struct.unpack_from("=i", body, 0)[0])
        elif typ == 2:                     # DISCONNECT
            pass
        else:
            typ = 0
        self.ctl.sendto(struct.pack("=IIII", magic, cid, typ, ln) + bytes(body), addr)

    def on_req(self, s):
        req = s.recv(4096)
        if len(req) < 32 + 256:
            return
        dlid, = struct.unpack_from("!H", req, 0)
        dqp, = struct.unpack_from("!I", req, 8)
        sqp, = struct.unpack_from("!I", req, 12)
        self.ca.from_sm(req[32:32 + 256], dlid, dqp, sqp)

    def run(self, stop):
        while not stop.is_set():
            socks = [self.ctl, self.ca.s] + list(self.out.values())
            r, _, _ = select.select(socks, [], [], 0.1)
            for s in r:
                if s is self.ctl:
                    self.on_ctl()
                elif s is self.ca.s:
                    f = s.recv(65536)
                    if not f:
                        return
                    self.ca.on_frame(f)
                else:
                    self.on_req(s)

    def close(self):
        for s in [self.ctl] + list(self.out.values()):
            s.close()


def umad2sim():
    for d in ("/usr/lib/x86_64-linux-gnu/umad2sim", "/usr/lib/umad2sim"):
        p = os.path.join(d, "libumad2sim.so")
        if os.path.exists(p):
            return p
    return None


def wait_for(pred, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return False
