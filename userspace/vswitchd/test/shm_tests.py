# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
"""Host tests of the switch's shared-memory ring ports (--shm-ring,
docs/shm-ring.md) with a fake device that speaks the ring protocol of
src/include/cnuas_shm_ring.h. run_tests.py imports this module and sets
Switch, frame, mac, recv_or_none and expect_none on it."""

import fcntl
import mmap
import os
import signal
import socket
import struct
import time

Switch = frame = mac = recv_or_none = expect_none = None

MAGIC = 0x52534E43
HELLO, ACCEPT, REFUSE, RING_ON = 1, 2, 3, 4
R_FDS = 2
SLOT = 9280        # CNUAS_SHM_SLOT_DEFAULT
CTL = 192          # struct cnuas_shm_ctl
HDR = 64           # struct cnuas_shm_area


def _cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def msg(kind, arg=0):
    return struct.pack("<IHHI", MAGIC, 1, kind, arg)


class RingDev:
    """A cnuas-vnic stand-in: one SEQPACKET connection and its two rings."""

    def __init__(self, sw, nslots=16, seal=True):
        self.s = sw.port()
        self.n = nslots
        ring = CTL + nslots * SLOT
        self.size = HDR + 2 * ring
        self.tx, self.rx = HDR, HDR + ring
        self.fd = os.memfd_create("cnuas-test-ring", os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, self.size)
        if seal:
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
        self.m = mmap.mmap(self.fd, self.size)
        self.w = memoryview(self.m).cast("I")
        struct.pack_into("<IIIIQQ", self.m, 0, MAGIC, 1, nslots, SLOT, self.tx, self.rx)
        self.sw_wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.rx_wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.tx_wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.prod = self.cons = 0

    def close(self):
        self.w.release()
        self.m.close()
        for fd in (self.fd, self.sw_wake, self.rx_wake, self.tx_wake):
            os.close(fd)

    def _u32(self, off, val=None):
        # one 4-byte load or store (struct's "<I" goes byte by byte: the
        # switch would see a torn index and hang the port up, rightly)
        if val is None:
            return self.w[off // 4]
        self.w[off // 4] = val & 0xffffffff

    def hello(self, fds=None):
        fds = [self.fd, self.sw_wake, self.rx_wake, self.tx_wake] if fds is None else fds
        socket.send_fds(self.s, [msg(HELLO, self.size)], fds)

    def answer(self):
        m = self.s.recv(65536)
        assert len(m) == 12, "want a ring message, got %d bytes" % len(m)
        magic, ver, kind, arg = struct.unpack("<IHHI", m)
        assert magic == MAGIC and ver == 1, m
        return kind, arg

    def send(self, f, timeout=5.0):
        """One frame into the TX ring, waiting for room; kick if the switch sleeps."""
        deadline = time.time() + timeout
        while (self.prod - self._u32(self.tx + 64)) & 0xffffffff == self.n:
            assert time.time() < deadline, "TX ring stayed full"
            time.sleep(0.001)
        slot = self.tx + CTL + (self.prod % self.n) * SLOT
        struct.pack_into("<II", self.m, slot, len(f), 0)
        self.m[slot + 16:slot + 16 + len(f)] = f
        self.prod += 1
        self._u32(self.tx, self.prod)
        if self._u32(self.tx + 4):
            os.eventfd_write(self.sw_wake, 1)

    def recv(self, timeout=5.0):
        """One frame from the RX ring, or None; kick if the switch waits for room."""
        deadline = time.time() + timeout
        while self._u32(self.rx) == self.cons:
            if time.time() >= deadline:
                return None
            time.sleep(0.001)
        slot = self.rx + CTL + (self.cons % self.n) * SLOT
        ln = self._u32(slot)
        f = bytes(self.m[slot + 16:slot + 16 + ln])
        self.cons = (self.cons + 1) & 0xffffffff
        self._u32(self.rx + 64, self.cons)
        if self._u32(self.rx + 68):
            os.eventfd_write(self.sw_wake, 1)
        return f

    def rings_on(self):
        self.hello()
        assert self.answer() == (ACCEPT, 0)
        self.s.send(msg(RING_ON))


def test_shm_ring_frames_both_ways():
    """A ring device and a socket device exchange frames in order, across
    the switch-over (frames sent on the socket before RING_ON first)."""
    with Switch("--shm-ring") as sw:
        a = RingDev(sw)
        b = sw.port()
        ids = sw.wait_ports(2)
        a.hello()
        assert a.answer() == (ACCEPT, 0)
        # still on the socket until RING_ON: learned, forwarded in order
        a.s.send(frame(b"\xff" * 6, mac(1), b"sock"))
        got = b.recv(65536)
        assert got[12:] == struct.pack("!H", 0x88B5) + b"sock", got
        a.s.send(msg(RING_ON))
        b.send(frame(mac(1), mac(2), b"to-a"))
        got = a.recv()
        assert got == frame(mac(1), mac(2), b"to-a"), got
        n = 200
        for i in range(n):
            a.send(frame(mac(2), mac(1), struct.pack("!I", i) + bytes(i * 40)))
        for i in range(n):
            got = b.recv(65536)
            assert got[14:18] == struct.pack("!I", i) and len(got) == 18 + i * 40, (i, len(got))
        for i in range(n):
            b.send(frame(mac(1), mac(2), struct.pack("!I", i)))
        for i in range(n):
            got = a.recv()
            assert got is not None and got[14:18] == struct.pack("!I", i), (
                i, got, sw.counters(ids[0]), sw.show(), a._u32(a.rx), a.cons, a._u32(a.rx + 68))
        ca = sw.counters(ids[0])
        assert ca["rx_frames"] == n + 1 and ca["tx_frames"] == n + 1, ca
        assert sum(v for k, v in ca.items() if k.startswith("drop_")) == 0, ca
        assert "shared-memory rings" in sw.logtext()
        # counters show the rings: on, nothing waiting, the switch asks
        # for a kick on the device's next frame, and kicks went out
        ring = sw.vsctl("counters", str(ids[0]), json_out=True)["ports"][0]["ring"]
        assert ring["step"] == "on" and ring["tx_waiting"] == 0 and ring["rx_waiting"] == 0, ring
        assert ring["switch_wants_tx"] and not ring["switch_wants_room"], ring
        assert not ring["device_wants_rx"] and not ring["device_wants_room"], ring
        assert ring["kicks_from_device"] >= 1, ring
        assert "ring" not in sw.vsctl("counters", str(ids[1]), json_out=True)["ports"][0]
        text = sw.vsctl("counters", str(ids[0])).stdout
        assert "ring                 on: TX 0 waiting, RX 0 waiting; kick asked by the switch: " \
            "TX frames, by the device: none" in text, text
        # idle rings: the switch sleeps (no wake-up loop on its eventfd)
        t0 = _cpu_s(sw.proc.pid)
        time.sleep(1.0)
        assert _cpu_s(sw.proc.pid) - t0 < 0.2, "switch busy while its rings are idle"
        a.close()


def test_shm_ring_full_pauses_sender():
    """A ring device that does not read: the socket sender is paused, not
    dropped; once the device reads, everything arrives in order."""
    with Switch("--shm-ring", "--queue-frames", "16") as sw:
        a = RingDev(sw)
        b = sw.port()
        ids = sw.wait_ports(2)
        a.rings_on()
        a.send(frame(b"\xff" * 6, mac(1)))
        b.recv(65536)
        b.setblocking(False)
        sent = 0
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                b.send(frame(mac(1), mac(2), struct.pack("!I", sent) + bytes(1000)))
                sent += 1
            except BlockingIOError:
                if sw.counters(ids[1])["bp_paused"]:
                    break
                time.sleep(0.01)
        assert sw.counters(ids[1])["bp_paused"] >= 1
        b.setblocking(True)
        for i in range(sent):
            got = a.recv()
            assert got is not None and got[14:18] == struct.pack("!I", i), (i, sent, got)
        assert a.recv(timeout=0.3) is None
        assert sum(v for k, v in sw.counters(ids[0]).items() if k.startswith("drop_")) == 0
        a.close()


def test_shm_ring_refused_and_fallback():
    """Wrong descriptors are refused and the device stays on the socket; a
    switch without --shm-ring counts the HELLO as a runt and says nothing;
    an old device (frame first) is a socket port."""
    with Switch("--shm-ring") as sw:
        a = RingDev(sw, seal=False)
        b = RingDev(sw)
        c = sw.port()
        sw.wait_ports(3)
        a.hello()
        assert a.answer() == (REFUSE, R_FDS)
        b.hello(fds=[b.fd])
        assert b.answer() == (REFUSE, R_FDS)
        a.s.send(frame(b"\xff" * 6, mac(1), b"x"))
        assert c.recv(65536)[6:12] == mac(1)
        assert b.s.recv(65536)[6:12] == mac(1)
        # an old device: its first message is a frame
        c.send(frame(mac(1), mac(3), b"y"))
        assert a.s.recv(65536)[12:] == struct.pack("!H", 0x88B5) + b"y"
        a.close()
        b.close()
    with Switch() as sw:
        a = RingDev(sw)
        c = sw.port()
        ids = sw.wait_ports(2)
        a.hello()
        expect_none(a.s, "a switch without --shm-ring answering a HELLO")
        assert sw.counters(ids[0])["drop_runt"] == 1
        a.s.send(frame(b"\xff" * 6, mac(1)))
        assert c.recv(65536)[6:12] == mac(1)
        a.close()


def test_shm_ring_socket_strays_and_eof():
    """After RING_ON a frame on the socket is a protocol error: counted
    as drop_bad_size, whether it came in RING_ON's own receive batch or
    later, and never forwarded; the rings go on working, and closing the
    socket still removes the port."""
    with Switch("--shm-ring") as sw:
        a = RingDev(sw)
        b = sw.port()
        ids = sw.wait_ports(2)
        a.hello()
        assert a.answer() == (ACCEPT, 0)
        # the switch stopped: RING_ON and two frames come in one receive batch
        os.kill(sw.proc.pid, signal.SIGSTOP)
        try:
            a.s.send(msg(RING_ON))
            a.s.send(frame(b"\xff" * 6, mac(1), b"stray1"))
            a.s.send(frame(b"\xff" * 6, mac(1), b"stray2"))
        finally:
            os.kill(sw.proc.pid, signal.SIGCONT)
        time.sleep(0.2)
        a.s.send(frame(b"\xff" * 6, mac(1), b"stray3"))
        a.send(frame(b"\xff" * 6, mac(1), b"ring"))
        assert b.recv(65536)[14:] == b"ring"
        expect_none(b, "a frame sent on the socket after RING_ON")
        ca = sw.counters(ids[0])
        assert ca["drop_bad_size"] == 3 and ca["rx_frames"] == 1, ca
        b.send(frame(mac(1), mac(2), b"to-a"))
        assert a.recv() == frame(mac(1), mac(2), b"to-a")
        a.s.close()
        deadline = time.time() + 5
        while len(sw.show()["ports"]) != 1:
            assert time.time() < deadline, sw.show()
            time.sleep(0.02)
        a.close()


def test_shm_ring_capture_faults_security():
    """What runs above the transport runs on a ring port: a one-port
    capture sees both ways, port security drops a spoofed source, and a
    drop fault takes its ingress."""
    with Switch("--shm-ring", "--port-security") as sw:
        a = RingDev(sw)
        b = sw.port()
        ids = sw.wait_ports(2)
        a.rings_on()
        a.send(frame(b"\xff" * 6, mac(1), b"hi"))
        assert b.recv(65536)[6:12] == mac(1)
        b.send(frame(b"\xff" * 6, mac(2), b"hi"))
        assert a.recv()[6:12] == mac(2)
        path = os.path.join(sw.dir, "ring.pcap")
        sw.vsctl("capture", "start", path, str(ids[0]))
        for _ in range(3):
            a.send(frame(mac(2), mac(1), b"in"))
            assert b.recv(65536).endswith(b"in")
            b.send(frame(mac(1), mac(2), b"out"))
            assert a.recv().endswith(b"out")
        r = sw.vsctl("capture", "stop", json_out=True)
        assert r["frames"] == 6, r
        a.send(frame(b"\xff" * 6, mac(2), b"spoof"))
        expect_none(b, "a ring port's frame from its neighbour's MAC")
        assert sw.counters(ids[0])["drop_mac_spoof"] == 1
        sw.vsctl("set-fault", "--port", str(ids[0]), "drop=100")
        a.send(frame(mac(2), mac(1), b"lost"))
        expect_none(b, "a frame the drop fault took")
        assert sw.counters(ids[0])["fault_drop"] == 1
        a.close()


def test_shm_ring_hostile_indexes():
    """A device that claims an impossible TX index is hung up; the switch
    lives on and other ports still work."""
    with Switch("--shm-ring") as sw:
        a = RingDev(sw)
        b, c = sw.port(), sw.port()
        sw.wait_ports(3)
        a.rings_on()
        a._u32(a.tx, 1000)     # 1000 frames in a 16-slot ring
        os.eventfd_write(a.sw_wake, 1)
        deadline = time.time() + 5
        while len(sw.show()["ports"]) != 2:
            assert time.time() < deadline, sw.show()
            time.sleep(0.02)
        b.send(frame(b"\xff" * 6, mac(2)))
        assert c.recv(65536)[6:12] == mac(2)
        a.close()
