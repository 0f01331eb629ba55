#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
"""Host tests of cnuas-vswitchd: each test starts the real daemon on temp
socket paths and talks to it over real sockets and the real control tool.
Prints PASS/FAIL/SKIP per test; exits non-zero if any test failed."""

import argparse
import json
import os
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

ARGS = None
BCAST = b"\xff" * 6


def mac(n):
    return bytes([0x02, 0, 0, 0, (n >> 8) & 0xff, n & 0xff])


def frame(dst, src, payload=b"", ethertype=0x88B5):
    return dst + src + struct.pack("!H", ethertype) + payload


class Switch:
    """A daemon instance in its own temp dir."""

    def __init__(self, *extra, check_exit=True, umask=None):
        self.dir = tempfile.mkdtemp(prefix="cnuas-vs-test-")
        self.sock = os.path.join(self.dir, "switch.sock")
        self.ctl = os.path.join(self.dir, "switch.ctl")
        self.log = os.path.join(self.dir, "switch.log")
        self.check_exit = check_exit
        self.ports = []
        with open(self.log, "w") as logf:
            self.proc = subprocess.Popen(
                [ARGS.switch, "--socket", self.sock, "--ctl", self.ctl, "--foreground", *extra],
                stderr=logf, stdout=subprocess.DEVNULL,
                preexec_fn=None if umask is None else (lambda: os.umask(umask)))
        deadline = time.time() + 10
        while not os.path.exists(self.ctl):
            if self.proc.poll() is not None:
                raise AssertionError("switch exited early: " + self.logtext())
            if time.time() > deadline:
                raise AssertionError("switch did not come up")
            time.sleep(0.02)

    def logtext(self):
        with open(self.log) as f:
            return f.read()

    def port(self, timeout=5.0):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(self.sock)
        s.settimeout(timeout)
        self.ports.append(s)
        return s

    def vsctl(self, *args, json_out=False, expect=0):
        cmd = [ARGS.vsctl, "--ctl", self.ctl] + (["--json"] if json_out else []) + list(args)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        if expect is not None and r.returncode != expect:
            raise AssertionError("%s: exit %d (want %d): %s%s" % (
                " ".join(args), r.returncode, expect, r.stdout, r.stderr))
        if json_out and r.returncode == 0:
            return json.loads(r.stdout)
        return r

    def show(self):
        return self.vsctl("show", json_out=True)

    def counters(self, port_id):
        return self.vsctl("counters", str(port_id), json_out=True)["ports"][0]["counters"]

    def port_ids(self):
        """Ids of the ports, in connection order (ids are never reused)."""
        return [p["id"] for p in self.show()["ports"]]

    def wait_ports(self, n):
        deadline = time.time() + 5
        while len(self.show()["ports"]) != n:
            if time.time() > deadline:
                raise AssertionError("want %d ports, have %s" % (n, self.show()["ports"]))
            time.sleep(0.02)
        return self.port_ids()

    def stop(self):
        for s in self.ports:
            s.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("switch ignored SIGTERM")
        log = self.logtext()
        self.stopped_log = log
        for bad in ("AddressSanitizer", "LeakSanitizer", "runtime error:", "UndefinedBehavior"):
            if bad in log:
                raise AssertionError("sanitizer report in switch log:\n" + log)
        if self.check_exit and rc != 0:
            raise AssertionError("switch exit code %d:\n%s" % (rc, log))
        if os.path.exists(self.sock) or os.path.exists(self.ctl):
            raise AssertionError("sockets not unlinked on shutdown")
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            self.stop()
            return
        try:
            self.stop()
        except Exception:
            pass
        if os.path.exists(self.log):
            print("---- switch log ----\n" + self.logtext(), file=sys.stderr)
        shutil.rmtree(self.dir, ignore_errors=True)


def recv_or_none(s, timeout=0.3):
    old = s.gettimeout()
    s.settimeout(timeout)
    try:
        return s.recv(65536)
    except socket.timeout:
        return None
    finally:
        s.settimeout(old)


def expect_none(s, what):
    got = recv_or_none(s)
    assert got is None, "%s: unexpected frame %r" % (what, got[:32])


def learn(sw, socks):
    """Each port i announces mac(i+1) with a broadcast; drain the copies."""
    for i, s in enumerate(socks):
        s.send(frame(BCAST, mac(i + 1), b"hello"))
        for j, o in enumerate(socks):
            if j != i:
                assert o.recv(65536)[6:12] == mac(i + 1)


# ------------------------------------------------------------------ tests

def test_learning():
    with Switch() as sw:
        a, b, c = sw.port(), sw.port(), sw.port()
        ids = sw.wait_ports(3)
        learn(sw, [a, b, c])
        a.send(frame(mac(2), mac(1), b"to-b"))
        assert b.recv(65536).endswith(b"to-b")
        expect_none(c, "unicast leaked to a third port")
        expect_none(a, "unicast came back")
        fdb = {e["mac"]: e["port"] for e in sw.vsctl("fdb", json_out=True)["fdb"]}
        assert fdb == {"02:00:00:00:00:01": ids[0], "02:00:00:00:00:02": ids[1],
                       "02:00:00:00:00:03": ids[2]}, fdb
        # a station that moves is re-learned on its new port
        c.send(frame(BCAST, mac(1), b"moved"))
        a.recv(65536), b.recv(65536)
        b.send(frame(mac(1), mac(2), b"follow"))
        assert c.recv(65536).endswith(b"follow")
        expect_none(a, "frame went to the old port of a moved station")


def test_aging():
    with Switch("--aging", "1") as sw:
        a, b, c = sw.port(), sw.port(), sw.port()
        sw.wait_ports(3)
        learn(sw, [a, b, c])
        b.send(frame(mac(1), mac(2), b"known"))
        assert a.recv(65536).endswith(b"known")
        expect_none(c, "known unicast flooded")
        time.sleep(2.6)
        assert sw.vsctl("fdb", json_out=True)["fdb"] == [], "entries did not age out"
        c.send(frame(mac(1), mac(5), b"unknown-again"))
        assert a.recv(65536).endswith(b"unknown-again")
        assert b.recv(65536).endswith(b"unknown-again")


def test_flooding():
    with Switch() as sw:
        socks = [sw.port() for _ in range(4)]
        ids = sw.wait_ports(4)
        for dst, what in ((BCAST, "broadcast"), (bytes.fromhex("01005e000001"), "multicast"),
                          (mac(77), "unknown unicast")):
            socks[0].send(frame(dst, mac(1), what.encode()))
            for s in socks[1:]:
                assert s.recv(65536).endswith(what.encode()), what
            expect_none(socks[0], what + " sent back to its ingress port")
        assert sw.counters(ids[0])["flood"] == 3


def test_no_hairpin():
    with Switch() as sw:
        a, b = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        a.send(frame(BCAST, mac(1)))
        a.send(frame(BCAST, mac(11)))   # two stations behind port a
        b.recv(65536), b.recv(65536)
        a.send(frame(mac(11), mac(1), b"local"))
        expect_none(a, "hairpin")
        expect_none(b, "frame for a station behind a went to b")
        assert sw.counters(ids[0])["drop_filtered"] == 1


def test_port_removal():
    with Switch() as sw:
        a, b, c = sw.port(), sw.port(), sw.port()
        ids = sw.wait_ports(3)
        learn(sw, [a, b, c])
        b.close()
        sw.ports.remove(b)
        sw.wait_ports(2)
        ports = {e["port"] for e in sw.vsctl("fdb", json_out=True)["fdb"]}
        assert ids[1] not in ports, "fdb still points at a removed port"
        a.send(frame(mac(2), mac(1), b"gone"))   # now unknown: flooded to c
        assert c.recv(65536).endswith(b"gone")


def test_backpressure_slow_reader():
    """A blasts B, who does not read: A gets paused, nothing is lost, and
    C->D keeps flowing meanwhile."""
    with Switch("--queue-frames", "64") as sw:
        a, b, c, d = [sw.port(timeout=30) for _ in range(4)]
        ids = sw.wait_ports(4)
        learn(sw, [a, b, c, d])
        n, size = 20000, 1000
        t, sent = _blast_until_paused(sw, a, ids[0], mac(2), n, size)
        st = sw.counters(ids[0])
        assert st["bp_paused"] >= 1, st
        # other ports still flow while A is paused
        for i in range(500):
            c.send(frame(mac(4), mac(3), struct.pack("!I", i)))
            assert d.recv(65536)[14:18] == struct.pack("!I", i)
        assert sw.show()["ports"][0]["state"] == "paused", "A was not paused meanwhile"
        # now B reads slowly at first, then fast; everything arrives in order
        for i in range(n):
            got = b.recv(65536)
            assert len(got) == size, len(got)
            seq = struct.unpack("!I", got[14:18])[0]
            assert seq == i, "frame %d arrived as #%d: lost or reordered" % (seq, i)
            if i < 200:
                time.sleep(0.001)
        t.join(10)
        assert not t.is_alive()
        cb = sw.counters(ids[1])
        assert cb["tx_frames"] == n + 3 and cb["bp_caused"] >= 1, cb
        for pid in ids:
            st = sw.counters(pid)
            drops = sum(v for k, v in st.items() if k.startswith("drop_"))
            assert drops == 0, (pid, st)


def _blast_until_paused(sw, a, a_id, dst, n, size=1000):
    """Send n numbered frames from a in a thread until the switch has
    paused a and the sender is stuck (all buffers on the way are full)."""
    sent = [0]

    def blast():
        try:
            for i in range(n):
                a.send(frame(dst, mac(1), struct.pack("!I", i) + b"x" * (size - 18)))
                sent[0] = i + 1
        except OSError:
            pass
    t = threading.Thread(target=blast, daemon=True)
    t.start()
    deadline = time.time() + 20
    while True:
        last = sent[0]
        time.sleep(0.3)
        if sent[0] == last and last < n and sw.counters(a_id)["bp_paused"] >= 1:
            return t, sent
        assert time.time() < deadline, "sender never blocked (frames dropped?)"


def _big(i):
    size = 4096 + (i * 997) % (9216 - 4096 + 1)
    body = struct.pack("!I", i) + bytes([(i + j) & 0xff for j in range(64)])
    return frame(mac(2), mac(1), (body * (size // len(body) + 1))[:size - 14])


def test_big_frames_paused_and_delayed_intact():
    """Jumbo frames that wait (paused sender, delay fault) arrive intact and in order."""
    with Switch("--queue-frames", "16") as sw:
        a, b = sw.port(timeout=30), sw.port(timeout=30)
        ids = sw.wait_ports(2)
        learn(sw, [a, b])
        n = 600
        t = threading.Thread(target=lambda: [a.send(_big(i)) for i in range(n)], daemon=True)
        t.start()
        time.sleep(0.5)                       # let everything back up
        for i in range(n):
            got = b.recv(65536)
            assert got == _big(i), "frame %d damaged or out of order" % i
        t.join(10)
        assert sw.counters(ids[0])["bp_paused"] >= 1
        sw.vsctl("fault", str(ids[0]), "delay=20", "reorder=0")
        # from a thread too: delayed frames released while we still send may
        # pause the sender on b's full queue until b is read
        t = threading.Thread(target=lambda: [a.send(_big(i)) for i in range(100)], daemon=True)
        t.start()
        for i in range(100):
            assert b.recv(65536) == _big(i), i
        t.join(10)


def test_sender_closes_while_paused():
    """Frames a paused sender left behind are still delivered after it goes."""
    with Switch("--queue-frames", "32") as sw:
        a, b = sw.port(timeout=30), sw.port(timeout=30)
        ids = sw.wait_ports(2)
        learn(sw, [a, b])
        t, sent = _blast_until_paused(sw, a, ids[0], mac(2), 100000)
        assert sw.show()["ports"][0]["state"] == "paused"
        a.shutdown(socket.SHUT_RDWR)
        t.join(10)
        # the sender's socket buffer content is what the kernel accepted: sent[0] frames
        a.close()
        sw.ports.remove(a)
        for i in range(sent[0]):
            got = b.recv(65536)
            assert struct.unpack("!I", got[14:18])[0] == i, i
        sw.wait_ports(1)
        assert sw.counters(ids[1])["tx_frames"] == sent[0] + 1


def test_slow_port_goes_away():
    """The full port a sender waits for disappears: the sender moves on."""
    with Switch("--queue-frames", "32") as sw:
        a, b, c = sw.port(timeout=30), sw.port(timeout=30), sw.port(timeout=30)
        ids = sw.wait_ports(3)
        learn(sw, [a, b, c])
        t, sent = _blast_until_paused(sw, a, ids[0], mac(2), 3000, size=200)
        got = []

        def reader():
            while True:
                f = recv_or_none(c, 1.0)
                if f is None:
                    return
                got.append(f)
        r = threading.Thread(target=reader, daemon=True)
        r.start()
        b.close()
        sw.ports.remove(b)
        t.join(20)
        assert not t.is_alive(), "sender still stuck after the slow port left"
        r.join(20)
        # what b never read is dropped with b; the rest (now unknown unicast)
        # floods to c, where flood copies beyond the headroom are dropped
        assert len(got) > 0
        seqs = [struct.unpack("!I", g[14:18])[0] for g in got]
        assert seqs == sorted(seqs), seqs
        ca, cc = sw.counters(ids[0]), sw.counters(ids[2])
        assert ca["flood"] - 1 == len(got) + cc["drop_flood_overflow"], (len(got), ca, cc)
        assert sw.show()["ports"][0]["state"] == "up"


def test_flood_to_full_port_does_not_stall():
    """b never reads: broadcasts overflow at b (counted), while c, reading,
    gets every one in order and the sender is never paused."""
    with Switch("--queue-frames", "32") as sw:
        a, b, c = sw.port(), sw.port(), sw.port()
        ids = sw.wait_ports(3)
        n = 3000
        got = []

        def reader():
            while len(got) < n:
                f = recv_or_none(c, 5.0)
                if f is None:
                    return
                got.append(f)
        t = threading.Thread(target=reader, daemon=True)
        t.start()
        for chunk in range(0, n, 25):
            for i in range(chunk, chunk + 25):
                a.send(frame(BCAST, mac(1), struct.pack("!I", i) + b"y" * 200))
            deadline = time.time() + 10
            while len(got) < chunk + 25:     # pace to c, not to b
                assert time.time() < deadline and t.is_alive(), "c stalled at %d" % len(got)
                time.sleep(0.001)
        t.join(10)
        assert [struct.unpack("!I", g[14:18])[0] for g in got] == list(range(n))
        cb, ca, cc = sw.counters(ids[1]), sw.counters(ids[0]), sw.counters(ids[2])
        assert cb["drop_flood_overflow"] > 0, cb
        assert cc["drop_flood_overflow"] == 0, cc
        assert ca["bp_paused"] == 0, ca


def test_counters():
    with Switch() as sw:
        a, b = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        learn(sw, [a, b])
        for i in range(10):
            a.send(frame(mac(2), mac(1), b"z" * 86))   # 100-byte frames
            b.recv(65536)
        ca, cb = sw.counters(ids[0]), sw.counters(ids[1])
        assert ca["rx_frames"] == 11 and ca["rx_bytes"] == 10 * 100 + 19, ca
        assert cb["tx_frames"] == 11 and cb["tx_bytes"] == 10 * 100 + 19, cb
        assert ca["flood"] == 1 and cb["flood"] == 1, (ca, cb)
        assert ca["tx_frames"] == 1 and cb["rx_frames"] == 1
        show = sw.show()
        assert [p["counters"]["rx_frames"] for p in show["ports"]] == [11, 1]
        assert all(p["kind"] == "seqpacket" and p["state"] == "up" and p["peer"].startswith("pid ")
                   for p in show["ports"]), show
        text = sw.vsctl("counters").stdout
        assert "rx_frames" in text and "bp_paused" in text, text
        text = sw.vsctl("show").stdout
        assert "seqpacket" in text and "PORT" in text, text


_NAMED_PEER = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
print("up", flush=True)
sys.stdin.read()
"""


def test_port_vm_name():
    """A port is named by its peer's QEMU -name (libvirt's guest=DOMAIN,
    the lab's nodeN), read from /proc/PID/cmdline as hostile input:
    printable, at most 64 bytes; a peer without one has none."""
    cases = [
        (["-name", "guest=web-1,debug-threads=on"], "web-1"),
        (["-name", "node3,debug-threads=on"], "node3"),
        (["-name", "first", "--name", "guest=a,,b,process=x"], "a,b"),
        (["-name", "guest=\x01evil\x7f \u00e9" + "A" * 200], None),
        (["-name", "debug-threads=on"], ""),
        ([], ""),
    ]
    with Switch() as sw:
        procs = []
        try:
            for args, _ in cases:
                pr = subprocess.Popen([sys.executable, "-c", _NAMED_PEER, sw.sock, *args],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                assert pr.stdout.readline() == "up\n"
                procs.append(pr)
            ports = sw.show()["ports"]
            assert len(ports) == len(cases), ports
            for (args, want), p, pr in zip(cases, ports, procs):
                assert p["peer"].startswith("pid %d" % pr.pid), (p, pr.pid)
                if want is None:
                    vm = p["vm"]
                    assert len(vm) == 64 and vm.startswith("?evil??") and vm.endswith("A"), vm
                    assert all(0x20 < ord(c) < 0x7f for c in vm), vm
                elif want:
                    assert p["vm"] == want and p["peer"].endswith(" vm " + want), p
                else:
                    assert p["vm"] is None and " vm " not in p["peer"], p
            text = sw.vsctl("show").stdout
            assert " VM " in text, text
            rows = {int(ln.split()[0]): ln.split()[1] for ln in text.splitlines()
                    if ln[:1].isdigit()}
            assert [rows[p["id"]] for p in ports[:3]] == ["web-1", "node3", "a,b"], text
            assert rows[ports[-1]["id"]] == "-", text
            assert "vm web-1" in sw.vsctl("counters", str(ports[0]["id"])).stdout
            assert "vm node3" in sw.logtext(), sw.logtext()
        finally:
            for pr in procs:
                pr.stdin.close()
                pr.wait(timeout=10)


def _fault_run(sw, a, b, a_id, spec, n=2000):
    sw.vsctl("fault", str(a_id), *spec)
    got = []
    done = threading.Event()

    def reader():
        while True:
            f = recv_or_none(b, 0.5)
            if f is None:
                if done.is_set():
                    return
                continue
            got.append(f)
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    for i in range(n):
        a.send(frame(mac(2), mac(1), struct.pack("!I", i) + bytes(range(46))))
    done.set()
    t.join(30)
    sw.vsctl("fault", str(a_id), "clear")
    return got


def test_fault_determinism():
    with Switch() as sw:
        a, b = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        learn(sw, [a, b])
        spec = ["drop=30", "corrupt=10", "reorder=5", "seed=42"]
        before = sw.counters(ids[0])
        r1 = _fault_run(sw, a, b, ids[0], spec)
        mid = sw.counters(ids[0])
        r2 = _fault_run(sw, a, b, ids[0], spec)
        after = sw.counters(ids[0])
        r3 = _fault_run(sw, a, b, ids[0], ["drop=30", "corrupt=10", "reorder=5", "seed=43"])
        assert sorted(r1) == sorted(r2), "same seed gave different faults"
        assert sorted(r1) != sorted(r3), "different seeds gave the same faults"
        d1 = {k: mid[k] - before[k] for k in mid}
        d2 = {k: after[k] - mid[k] for k in after}
        for k in ("fault_drop", "fault_corrupt", "fault_reorder"):
            assert d1[k] == d2[k], (k, d1[k], d2[k])
        assert 500 <= d1["fault_drop"] <= 700, d1
        assert len(r1) == 2000 - d1["fault_drop"]
        # corruption leaves the Ethernet header alone, so frames still arrive
        bad = 0
        for f in r1:
            assert f[:14] == mac(2) + mac(1) + b"\x88\xb5", f[:14]
            seq = struct.unpack("!I", f[14:18])[0]
            if f[14:] != struct.pack("!I", seq) + bytes(range(46)):
                bad += 1
        # one flipped bit; in the 4 sequence bytes (8% of the payload) it
        # makes the frame look like an intact other one
        assert d1["fault_corrupt"] * 0.8 <= bad <= d1["fault_corrupt"], (bad, d1)
        assert d1["fault_reorder"] > 0
        # delay
        sw.vsctl("fault", str(ids[0]), "delay=300", "seed=1")
        t0 = time.time()
        a.send(frame(mac(2), mac(1), b"late"))
        assert b.recv(65536).endswith(b"late")
        dt = time.time() - t0
        assert dt >= 0.28, "delay not applied: %.3f s" % dt
        sw.vsctl("fault", str(ids[0]), "clear")
        assert sw.show()["ports"][0]["fault"] is None


def test_fault_kinds():
    """drop=100 drops all, corrupt=100 corrupts all (header intact),
    reorder=100 swaps neighbours; faults act on ingress only."""
    with Switch() as sw:
        a, b = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        learn(sw, [a, b])
        sw.vsctl("fault", str(ids[0]), "drop=100")
        for i in range(20):
            a.send(frame(mac(2), mac(1), b"gone"))
        expect_none(b, "frame passed drop=100")
        b.send(frame(mac(1), mac(2), b"other-way"))   # b's ingress is healthy
        assert a.recv(65536).endswith(b"other-way")
        assert sw.counters(ids[0])["fault_drop"] == 20
        sw.vsctl("fault", str(ids[0]), "corrupt=100", "seed=9")
        payload = bytes(range(200))
        for i in range(20):
            a.send(frame(mac(2), mac(1), payload))
            f = b.recv(65536)
            assert f[:14] == mac(2) + mac(1) + b"\x88\xb5" and f[14:] != payload
            assert sum(x != y for x, y in zip(f[14:], payload)) <= 4
        sw.vsctl("fault", str(ids[0]), "reorder=100")
        n = 100
        for i in range(n):
            a.send(frame(mac(2), mac(1), struct.pack("!I", i)))
        seqs = [struct.unpack("!I", b.recv(65536)[14:18])[0] for _ in range(n)]
        assert sorted(seqs) == list(range(n)), seqs
        swapped = sum(1 for k in range(0, n, 2) if seqs[k:k + 2] == [k + 1, k])
        assert swapped >= 40, seqs
        c = sw.counters(ids[0])
        assert c["fault_corrupt"] == 20 and c["fault_reorder"] >= 40, c


def roce_frame(dst, src, payload, v6=False, dport=4791):
    """Ethernet + IPv4/IPv6 + UDP (dport) + 12-byte BTH + payload + 4-byte ICRC."""
    bth = bytes([0x04, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0x80, 0, 0, 0x2a])
    udp_pl = bth + payload + b"\xde\xad\xbe\xef"
    udp = struct.pack("!HHHH", 0xc000, dport, 8 + len(udp_pl), 0) + udp_pl
    if v6:
        ip = struct.pack("!IHBB", 0x60000000, len(udp), 17, 64) + b"\xfe\x80" + b"\x00" * 14 + \
            b"\xfe\x80" + b"\x00" * 13 + b"\x02"
        return frame(dst, src, ip + udp, 0x86DD), 14 + 40
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2]))
    return frame(dst, src, ip + udp, 0x0800), 14 + 20


def _bit_diffs(a, b):
    """Positions (byte, bit) where a and b differ (same length)."""
    assert len(a) == len(b)
    return [(i, k) for i, (x, y) in enumerate(zip(a, b)) for k in range(8) if (x ^ y) >> k & 1]


def test_set_fault_corrupt_roce():
    """set-fault (all ports) corrupt=100 flips exactly one bit; in RoCEv2
    frames (IPv4 and IPv6, UDP 4791) only after the BTH, so the IP/UDP
    headers and the BTH stay intact; other frames anywhere after the
    Ethernet header. A port that connects later gets the setting too."""
    with Switch() as sw:
        a, b = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        learn(sw, [a, b])
        r = sw.vsctl("set-fault", "corrupt=100", "seed=5")
        assert "all ports" in r.stdout, r.stdout
        for v6 in (False, True):
            for i in range(200):
                f, l4 = roce_frame(mac(2), mac(1), bytes((i + k) & 0xff for k in range(i % 64 + 1)), v6)
                a.send(f)
                g = b.recv(65536)
                d = _bit_diffs(f, g)
                assert len(d) == 1, d
                assert d[0][0] >= l4 + 8 + 12, (v6, d, l4)
        # not RoCE (UDP to another port): anywhere after the Ethernet header
        lo = []
        for i in range(300):
            f, l4 = roce_frame(mac(1), mac(2), b"x" * 40, dport=53)
            b.send(f)
            g = a.recv(65536)
            d = _bit_diffs(f, g)
            assert len(d) == 1 and d[0][0] >= 14, d
            lo.append(d[0][0])
        assert min(lo) < 14 + 20 + 8, "non-RoCE corruption never hit the headers: %s" % min(lo)
        ca, cb = sw.counters(ids[0]), sw.counters(ids[1])
        assert ca["fault_corrupt"] == 400 and cb["fault_corrupt"] == 300, (ca, cb)
        text = sw.vsctl("show").stdout
        assert "INJECTED" in text and "0/0/400/0" in text and "fault all ports: " in text, text
        # a port that connects later inherits the all-ports setting
        c = sw.port()
        ids = sw.wait_ports(3)
        c.send(frame(mac(1), mac(3), bytes(100)))
        g = a.recv(65536)
        assert g[:14] == mac(1) + mac(3) + b"\x88\xb5" and g[14:] != bytes(100)
        assert sw.counters(ids[2])["fault_corrupt"] == 1
        sw.vsctl("set-fault", "--port", "all", "drop=0", "reorder=0", "corrupt=0")
        show = sw.show()
        assert show["fault_all"] is None and all(p["fault"] is None for p in show["ports"]), show
        a.send(frame(mac(2), mac(1), bytes(100)))
        assert b.recv(65536)[14:] == bytes(100)


def _set_fault_run(sw, a, b, spec, n=4000):
    sw.vsctl("set-fault", *spec)
    got = []
    done = threading.Event()

    def reader():
        while True:
            f = recv_or_none(b, 0.5)
            if f is None:
                if done.is_set():
                    return
                continue
            got.append(f)
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    for i in range(n):
        f, _ = roce_frame(mac(2), mac(1), struct.pack("!I", i) + bytes(60))
        a.send(f)
    done.set()
    t.join(30)
    sw.vsctl("set-fault", "clear")
    return got


def test_set_fault_rates_and_seed():
    """set-fault --port ID drop=5 reorder=3 corrupt=1.5 seed=N: counts near
    the rates, every frame that is not dropped arrives once, the same seed
    gives the same faults, the other port stays clean."""
    with Switch() as sw:
        a, b = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        learn(sw, [a, b])
        spec = ["--port", str(ids[0]), "drop=5", "reorder=3", "corrupt=1.5", "seed=77"]
        c0 = sw.counters(ids[0])
        r1 = _set_fault_run(sw, a, b, spec)
        c1 = sw.counters(ids[0])
        r2 = _set_fault_run(sw, a, b, spec)
        c2 = sw.counters(ids[0])
        d1 = {k: c1[k] - c0[k] for k in c1}
        d2 = {k: c2[k] - c1[k] for k in c2}
        for k in ("fault_drop", "fault_corrupt", "fault_reorder"):
            assert d1[k] == d2[k], (k, d1, d2)
        assert 130 <= d1["fault_drop"] <= 270, d1
        assert 90 <= d1["fault_reorder"] <= 160, d1
        assert 30 <= d1["fault_corrupt"] <= 95, d1
        assert len(r1) == 4000 - d1["fault_drop"] and sorted(r1) == sorted(r2)
        # the corrupted bit is never in the sequence number's headers
        seqs = [struct.unpack("!I", f[14 + 20 + 8 + 12:][:4])[0] for f in r1]
        # (a flipped bit may land in the sequence number itself)
        assert len(set(seqs)) >= len(seqs) - d1["fault_corrupt"], "duplicate frames"
        late = sum(1 for x, y in zip(seqs, seqs[1:]) if y < x)
        assert late >= d1["fault_reorder"] // 2, (late, d1)
        cb = sw.counters(ids[1])
        assert cb["fault_drop"] == cb["fault_corrupt"] == cb["fault_reorder"] == 0, cb
        # decimals and a port-specific clear
        sw.vsctl("set-fault", "--port=%d" % ids[1], "drop=0.25")
        assert sw.show()["ports"][1]["fault"]["drop"] == 0.25
        sw.vsctl("set-fault", "--port", str(ids[1]), "clear")
        assert sw.show()["ports"][1]["fault"] is None


def test_set_fault_reorder_per_destination():
    """reorder=100: a held frame goes out right after the next frame from
    the same port to the same MAC (frames to other MACs pass it), and a
    frame with no follower still arrives (time bound)."""
    with Switch() as sw:
        a, b, c = sw.port(), sw.port(), sw.port()
        ids = sw.wait_ports(3)
        learn(sw, [a, b, c])
        sw.vsctl("set-fault", "--port", str(ids[0]), "reorder=100")
        swapped = 0
        for i in range(20):
            # b0 is held; c0 (another MAC) passes it; b1 releases it
            a.send(frame(mac(2), mac(1), b"b0-%d" % i))
            a.send(frame(mac(3), mac(1), b"c0-%d" % i))
            a.send(frame(mac(2), mac(1), b"b1-%d" % i))
            assert c.recv(65536).endswith(b"c0-%d" % i)
            got = [b.recv(65536)[14:], b.recv(65536)[14:]]
            assert sorted(got) == [b"b0-%d" % i, b"b1-%d" % i], got
            swapped += got == [b"b1-%d" % i, b"b0-%d" % i]
            time.sleep(0.02)    # let any frame still held time out
            expect_none(b, "extra frame") if i == 19 else None
        # (the 5 ms hold bound may release b0 early on a loaded machine)
        assert swapped >= 10, swapped
        # a lone held frame is not lost
        a.send(frame(mac(3), mac(1), b"lone"))
        t0 = time.time()
        assert c.recv(65536).endswith(b"lone")
        assert time.time() - t0 < 1.0
        assert sw.counters(ids[0])["fault_reorder"] >= 2


def test_set_fault_errors():
    """Bad set-fault values are refused with a clear error and change nothing."""
    with Switch() as sw:
        sw.port()
        ids = sw.wait_ports(1)
        for args, rc, msg in (
                (["drop=101"], 1, "bad value"),
                (["drop=-1"], 1, "bad value"),
                (["corrupt=abc"], 1, "bad value"),
                (["reorder=5%"], 1, "bad value"),
                (["seed=-3", "drop=1"], 1, "bad value"),
                (["jitter=1"], 1, "unknown fault key"),
                (["drop"], 1, "key=value"),
                (["--port", "99", "drop=1"], 1, "no port 99"),
                (["--port", "x", "drop=1"], 1, "bad port"),
                (["--port", str(ids[0])], 1, "usage: set-fault"),
                (["--port"], 1, "--port needs"),
                ([], 2, "wrong number of arguments")):
            r = sw.vsctl("set-fault", *args, expect=rc)
            assert msg in r.stderr, (args, r.stderr)
        show = sw.show()
        assert show["fault_all"] is None and show["ports"][0]["fault"] is None, show


def test_systemd_notify_and_detach():
    """READY=1 reaches NOTIFY_SOCKET; without --foreground the daemon
    detaches once its sockets are bound."""
    d = tempfile.mkdtemp(prefix="cnuas-vs-sd-")
    try:
        ns = os.path.join(d, "notify")
        n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        n.bind(ns)
        n.settimeout(10)
        sock, ctl = os.path.join(d, "s"), os.path.join(d, "c")
        env = dict(os.environ, NOTIFY_SOCKET=ns)
        p = subprocess.Popen([ARGS.switch, "--socket", sock, "--ctl", ctl, "--foreground"], env=env,
                             stderr=subprocess.DEVNULL)
        try:
            msg = n.recv(4096)
            if b"READY=1" not in msg:
                raise AssertionError("no READY=1: %r" % msg)
            assert os.path.exists(sock) and os.path.exists(ctl)
        finally:
            p.send_signal(signal.SIGINT)
            assert p.wait(10) == 0
        # detached mode
        r = subprocess.run([ARGS.switch, "--socket", sock, "--ctl", ctl], timeout=20)
        assert r.returncode == 0
        assert os.path.exists(sock), "parent returned before the socket was bound"
        r = subprocess.run([ARGS.vsctl, "--ctl", ctl, "shutdown"], capture_output=True, timeout=10)
        assert r.returncode == 0, r
        deadline = time.time() + 10
        while os.path.exists(sock):
            assert time.time() < deadline, "detached daemon did not stop"
            time.sleep(0.05)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _tshark(path, *fields):
    r = subprocess.run(["tshark", "-r", path, "-T", "fields"] + sum([["-e", f] for f in fields], []),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [l.split("\t") for l in r.stdout.splitlines()]


def test_pcap_capture():
    if not shutil.which("tshark"):
        return "SKIP: tshark not installed"
    with Switch() as sw:
        a, b, c = sw.port(), sw.port(), sw.port()
        ids = sw.wait_ports(3)
        learn(sw, [a, b, c])
        all_path = os.path.join(sw.dir, "all.pcap")
        one_path = os.path.join(sw.dir, "b.pcap")
        r = sw.vsctl("capture", "start", all_path, json_out=True)
        assert r["file"] == all_path
        sw.vsctl("capture", "start", one_path, expect=1)   # only one at a time
        for i in range(25):
            a.send(frame(mac(2), mac(1), b"p" * 100))
            b.recv(65536)
            c.send(frame(mac(1), mac(3), b"q" * 50))
            a.recv(65536)
        r = sw.vsctl("capture", "stop", json_out=True)
        assert r["frames"] == 50, r
        rows = _tshark(all_path, "eth.src", "eth.dst", "frame.len")
        assert len(rows) == 50, len(rows)
        assert rows[0] == ["02:00:00:00:00:01", "02:00:00:00:00:02", "114"], rows[0]
        # one port: what b sent and what it received
        sw.vsctl("capture", "start", one_path, str(ids[1]))
        for i in range(7):
            a.send(frame(mac(2), mac(1), b"r" * 60))
            b.recv(65536)
        b.send(frame(mac(3), mac(2), b"s" * 60))
        c.recv(65536)
        c.send(frame(mac(1), mac(3), b"t" * 60))   # not b's: not captured
        a.recv(65536)
        sw.vsctl("capture", "stop")
        assert len(_tshark(one_path, "frame.number")) == 8
        # capture is flushed on SIGTERM too
        last = os.path.join(sw.dir, "term.pcap")
        sw.vsctl("capture", "start", last)
        for i in range(5):
            a.send(frame(mac(2), mac(1), b"u" * 60))
            b.recv(65536)
        sw.proc.send_signal(signal.SIGTERM)
        assert sw.proc.wait(10) == 0
        assert len(_tshark(last, "frame.number")) == 5
        sw.vsctl("capture", "stop", expect=3)
        tmp = tempfile.mkdtemp()
        shutil.copy(last, tmp)


def _dgram_sock(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(5)
    return s


def test_dgram_port():
    d = tempfile.mkdtemp(prefix="cnuas-vs-dg-")
    try:
        sw_path, q_path = os.path.join(d, "sw.dgram"), os.path.join(d, "qemu.dgram")
        # switch first, QEMU later
        with Switch("--dgram", "%s=%s" % (sw_path, q_path)) as sw:
            a = sw.port()
            ids = sw.wait_ports(2)
            dg_id = [p["id"] for p in sw.show()["ports"] if p["kind"] == "dgram"][0]
            assert sw.show()["ports"][0]["state"] == "waiting"
            a.send(frame(BCAST, mac(1), b"nobody-there"))
            time.sleep(0.2)
            assert sw.counters(dg_id)["drop_peer_absent"] == 1
            q = _dgram_sock(q_path)
            q.sendto(frame(BCAST, mac(9), b"from-qemu"), sw_path)
            assert a.recv(65536).endswith(b"from-qemu")
            a.send(frame(mac(9), mac(1), b"to-qemu"))
            data, addr = q.recvfrom(65536)
            assert data.endswith(b"to-qemu") and addr == sw_path
            assert [p["state"] for p in sw.show()["ports"] if p["id"] == dg_id] == ["up"]
            # a stranger's datagrams are ignored
            x = _dgram_sock(os.path.join(d, "stranger"))
            x.sendto(frame(BCAST, mac(8), b"stranger"), sw_path)
            expect_none(a, "frame from a foreign dgram sender")
            assert sw.counters(dg_id)["drop_foreign"] == 1
            # lots of frames to QEMU: best effort back-pressure keeps them
            n = 300
            for i in range(n):
                a.send(frame(mac(9), mac(1), struct.pack("!I", i)))
            seqs = [struct.unpack("!I", q.recv(65536)[14:18])[0] for _ in range(n)]
            assert seqs == list(range(n))
            # the same through delayed release (timer path) into a full QEMU queue
            a_id = [p["id"] for p in sw.show()["ports"] if p["kind"] == "seqpacket"][0]
            sw.vsctl("fault", str(a_id), "delay=50")
            for i in range(n):
                a.send(frame(mac(9), mac(1), struct.pack("!I", i)))
            time.sleep(0.3)
            seqs = [struct.unpack("!I", q.recv(65536)[14:18])[0] for _ in range(n)]
            assert seqs == list(range(n))
            q.close()
            x.close()
            os.unlink(q_path)
            os.unlink(os.path.join(d, "stranger"))
        assert not os.path.exists(sw_path), "dgram socket not unlinked"
        # QEMU first, port added at runtime
        q = _dgram_sock(q_path)
        with Switch() as sw:
            a = sw.port()
            sw_path = os.path.join(sw.dir, "sw.dgram")
            r = sw.vsctl("add-dgram", sw_path, q_path, json_out=True)
            dg_id = r["port"]
            sw.vsctl("add-dgram", sw_path, q_path, expect=1)   # duplicate
            a.send(frame(BCAST, mac(1), b"hi-qemu"))
            assert q.recv(65536).endswith(b"hi-qemu")
            q.sendto(frame(mac(1), mac(9), b"hi-a"), sw_path)
            assert a.recv(65536).endswith(b"hi-a")
            assert sw.counters(dg_id)["rx_frames"] == 1
        q.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _qemu_dgram(d, q_path, sw_path, pcap):
    return subprocess.Popen(
        ["qemu-system-x86_64", "-S", "-nodefaults", "-display", "none", "-M", "pc", "-m", "32",
         "-accel", "tcg", "-netdev",
         "dgram,id=n0,local.type=unix,local.path=%s,remote.type=unix,remote.path=%s" % (
             q_path, sw_path),
         "-device", "virtio-net-pci,netdev=n0,romfile=",
         "-object", "filter-dump,id=f0,netdev=n0,file=%s" % pcap],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_dgram_real_qemu():
    """A stock QEMU -netdev dgram receives what the switch sends, whether
    QEMU or the switch starts first (QEMU's filter-dump is the witness)."""
    if not shutil.which("qemu-system-x86_64") or not shutil.which("tshark"):
        return "SKIP: qemu-system-x86_64 or tshark not installed"
    d = tempfile.mkdtemp(prefix="cnuas-vs-qemu-")
    try:
        sw_path, q_path = os.path.join(d, "sw.dgram"), os.path.join(d, "qemu.dgram")
        for qemu_first in (True, False):
            pcap = os.path.join(d, "qemu-%d.pcap" % qemu_first)
            q = _qemu_dgram(d, q_path, sw_path, pcap) if qemu_first else None
            try:
                if q:
                    deadline = time.time() + 20
                    while not os.path.exists(q_path):
                        assert q.poll() is None, "QEMU failed to start"
                        assert time.time() < deadline, "QEMU did not bind its socket"
                        time.sleep(0.05)
                with Switch("--dgram", "%s=%s" % (sw_path, q_path)) as sw:
                    a = sw.port()
                    sw.wait_ports(2)
                    if not q:
                        q = _qemu_dgram(d, q_path, sw_path, pcap)
                        deadline = time.time() + 20
                        while not os.path.exists(q_path):
                            assert q.poll() is None, "QEMU failed to start"
                            assert time.time() < deadline, "QEMU did not bind its socket"
                            time.sleep(0.05)
                    deadline = time.time() + 10
                    while True:   # until QEMU has bound its socket and takes frames
                        a.send(frame(BCAST, mac(0x77), b"hello-qemu"))
                        time.sleep(0.2)
                        dg = [p for p in sw.show()["ports"] if p["kind"] == "dgram"][0]
                        if dg["counters"]["tx_frames"] >= 1:
                            break
                        assert time.time() < deadline, dg
                    assert dg["state"] == "up", dg
                    time.sleep(0.3)
            finally:
                q.terminate()
                q.wait(10)
                if os.path.exists(q_path):
                    os.unlink(q_path)   # QEMU leaves its socket file behind
            rows = _tshark(pcap, "eth.src", "eth.dst")
            assert ["02:00:00:00:00:77", "ff:ff:ff:ff:ff:ff"] in rows, rows
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _stream_conn(path, timeout=5.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(timeout)
    return s


def _recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise AssertionError("stream closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def _stream_frame(s):
    """One length-prefixed frame from the switch."""
    (n,) = struct.unpack("!I", _recv_exact(s, 4))
    assert 14 <= n <= 9216, n
    return _recv_exact(s, n)


def _lp(f):
    return struct.pack("!I", len(f)) + f


def _stream_switch(d, *extra):
    path = os.path.join(d, "sw.stream")
    return path, Switch("--stream", path, *extra)


def _stream_port_id(sw):
    return [p["id"] for p in sw.show()["ports"] if p["kind"] == "stream"][0]


def test_stream_port():
    """QEMU's -netdev stream framing: good frames, frames split anywhere,
    several in one write, the largest, and a slow reader that fills the
    socket (partial writes) losing nothing and keeping order."""
    d = tempfile.mkdtemp(prefix="cnuas-vs-st-")
    try:
        path, sw = _stream_switch(d)
        with sw:
            a = sw.port()
            s = _stream_conn(path)
            ids = sw.wait_ports(2)
            st = _stream_port_id(sw)
            assert [p["state"] for p in sw.show()["ports"] if p["id"] == st] == ["up"]
            # one frame in one write, both ways
            s.sendall(_lp(frame(BCAST, mac(9), b"from-stream")))
            assert a.recv(65536) == frame(BCAST, mac(9), b"from-stream")
            a.send(frame(mac(9), mac(1), b"to-stream"))
            assert _stream_frame(s) == frame(mac(9), mac(1), b"to-stream")
            # split at every point: length bytes one by one, the frame in pieces
            f = frame(mac(1), mac(9), b"split-%d" % 7 + bytes(range(200)))
            w = _lp(f)
            for i in range(len(w)):
                s.send(w[i:i + 1])
                if i in (0, 1, 2, 3, 4, 20, 100):
                    time.sleep(0.05)   # really separate reads in the switch
            assert a.recv(65536) == f
            # three frames and the start of a fourth in one write, then the rest
            fs = [frame(mac(1), mac(9), b"multi-%d" % i * (i + 1)) for i in range(4)]
            w = b"".join(_lp(x) for x in fs)
            s.sendall(w[:-7])
            for x in fs[:3]:
                assert a.recv(65536) == x
            expect_none(a, "a frame before all its bytes came")
            s.sendall(w[-7:])
            assert a.recv(65536) == fs[3]
            # the largest frame both ways
            big = frame(mac(1), mac(9), b"j" * (9216 - 14))
            s.sendall(_lp(big))
            assert a.recv(65536) == big
            big2 = frame(mac(9), mac(1), b"k" * (9216 - 14))
            a.send(big2)
            assert _stream_frame(s) == big2
            # a runt is dropped as on any port, the connection stays
            s.sendall(_lp(b"\x01\x02\x03"))
            time.sleep(0.2)
            assert sw.counters(st)["drop_runt"] == 1
            # a reader that does not read: the socket fills, frames wait in the
            # queue (partial writes) and the sender is paused, never dropped
            n = 3000
            sent = [0]

            def sender():
                for i in range(n):
                    a.send(frame(mac(9), mac(1), struct.pack("!I", i) + b"p" * (1000 + i % 700)))
                    sent[0] += 1

            t = threading.Thread(target=sender)
            t.start()
            time.sleep(1.0)
            c = sw.counters(ids[0])
            assert sent[0] < n and c["bp_paused"] >= 1, (sent[0], c)
            seqs = []
            for i in range(n):
                g = _stream_frame(s)
                seqs.append(struct.unpack("!I", g[14:18])[0])
                assert len(g) == 18 + 1000 + seqs[-1] % 700
            t.join(30)
            assert seqs == list(range(n))
            c = sw.counters(st)
            assert c["tx_frames"] == n + 2 and c["drop_port_closed"] == 0, c
            assert c["stream_bad_length"] == 0 and sw.show()["stream_framing_errors"] == 0
            # the other way: the stream port is paused by a slow reader; its
            # frames wait in the socket and come out whole and in order
            sent[0] = 0

            def stream_sender():
                for i in range(n):
                    s.sendall(_lp(frame(mac(1), mac(9), struct.pack("!I", i) + b"s" * (1000 + i % 700))))
                    sent[0] += 1

            t = threading.Thread(target=stream_sender)
            t.start()
            time.sleep(1.0)
            c = sw.counters(st)
            assert sent[0] < n and c["bp_paused"] >= 1, (sent[0], c)
            seqs = []
            for i in range(n):
                g = a.recv(65536)
                seqs.append(struct.unpack("!I", g[14:18])[0])
                assert len(g) == 18 + 1000 + seqs[-1] % 700
            t.join(30)
            assert seqs == list(range(n))
            # and after that both ways still work
            s.sendall(_lp(frame(mac(1), mac(9), b"after")))
            assert a.recv(65536) == frame(mac(1), mac(9), b"after")
            s.close()
            sw.wait_ports(1)
        assert not os.path.exists(path), "stream socket not unlinked"
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_stream_bad_lengths():
    """A length of 0 or above 9216 drops that connection with a clear log
    line and a count; the frames before it still go, the other ports and
    later connections are untouched; a peer gone mid-frame leaves nothing
    half-forwarded."""
    d = tempfile.mkdtemp(prefix="cnuas-vs-st-")
    try:
        path, sw = _stream_switch(d)
        with sw:
            a = sw.port()
            good = _stream_conn(path)
            sw.wait_ports(2)
            bad_cases = [struct.pack("!I", 0), struct.pack("!I", 9217),
                         struct.pack("!I", 0xffffffff), struct.pack("!I", 70000) + b"x" * 100]
            for i, bad in enumerate(bad_cases):
                s = _stream_conn(path)
                sw.wait_ports(3)
                before = frame(BCAST, mac(0x40 + i), b"before-bad")
                s.sendall(_lp(before) + bad)
                assert a.recv(65536) == before
                assert good.recv(65536 + 4)[4:] == before   # a stream port got the flood too
                s.settimeout(5)
                try:
                    assert s.recv(100) == b"", "switch kept a connection with a bad length"
                except ConnectionResetError:
                    pass
                s.close()
                sw.wait_ports(2)
                assert sw.show()["stream_framing_errors"] == i + 1
            assert "frame length 0 is not in 1..9216: connection dropped" in sw.logtext()
            assert "frame length 9217 is not in 1..9216" in sw.logtext()
            assert "frame length 4294967295 is not in 1..9216" in sw.logtext()
            # gone in the middle of a frame (and of a length): nothing forwarded
            for cut in (2, 4 + 10):
                s = _stream_conn(path)
                sw.wait_ports(3)
                s.sendall(_lp(frame(BCAST, mac(0x50), b"half" * 10))[:cut])
                time.sleep(0.1)
                s.close()
                sw.wait_ports(2)
                expect_none(a, "part of a frame forwarded")
            assert sw.show()["stream_framing_errors"] == 4
            # a peer that resets with frames queued to it
            s = _stream_conn(path)
            sw.wait_ports(3)
            s.sendall(_lp(frame(BCAST, mac(0x60), b"hello")))
            a.recv(65536)
            good.recv(65536)
            for i in range(200):
                a.send(frame(mac(0x60), mac(1), b"q" * 8000))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
            sw.wait_ports(2)
            # the survivors still talk both ways
            a.send(frame(mac(0x77), mac(1), b"still-here"))   # unknown: flooded
            assert _stream_frame(good) == frame(mac(0x77), mac(1), b"still-here")
            good.sendall(_lp(frame(mac(1), mac(0x77), b"me-too")))
            assert a.recv(65536) == frame(mac(1), mac(0x77), b"me-too")
            assert [p["state"] for p in sw.show()["ports"]] == ["up", "up"]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_stream_options():
    d = tempfile.mkdtemp(prefix="cnuas-vs-st-")
    try:
        sock = os.path.join(d, "s.sock")
        r = subprocess.run([ARGS.switch, "--socket", sock, "--stream", sock, "--foreground"],
                           capture_output=True, text=True, timeout=20)
        assert r.returncode != 0 and "is the switch's or control socket" in r.stderr, r.stderr
        r = subprocess.run([ARGS.switch, "--link-layer", "ib", "--socket", sock, "--stream",
                            os.path.join(d, "x"), "--foreground"],
                           capture_output=True, text=True, timeout=20)
        assert r.returncode == 2 and "--stream" in r.stderr, r.stderr
        # two stream sockets, a connection on each
        p1, p2 = os.path.join(d, "a.stream"), os.path.join(d, "b.stream")
        with Switch("--stream", p1, "--stream", p2) as sw:
            s1, s2 = _stream_conn(p1), _stream_conn(p2)
            sw.wait_ports(2)
            s1.sendall(_lp(frame(BCAST, mac(1), b"one")))
            assert _stream_frame(s2) == frame(BCAST, mac(1), b"one")
            st = [p for p in sw.show()["ports"] if p["kind"] == "stream"]
            assert len(st) == 2 and st[0]["peer"].startswith(p1), st
            # del-port hangs a stream peer up like a guest's
            sw.vsctl("del-port", str(st[0]["id"]))
            assert s1.recv(10) == b""
            sw.wait_ports(1)
            s1.close()
            # at run time, only beside the switch's socket, never twice
            p3 = os.path.join(sw.dir, "c.stream")
            r = sw.vsctl("add-stream", p3, json_out=True)
            assert r["stream"] == p3, r
            sw.vsctl("add-stream", p3, expect=1)
            r = sw.vsctl("add-stream", os.path.join(d, "elsewhere.stream"), expect=1)
            assert "must be in the directory of" in r.stderr, r.stderr
            s3 = _stream_conn(p3)
            sw.wait_ports(2)
            s3.sendall(_lp(frame(BCAST, mac(3), b"three")))
            assert _stream_frame(s2) == frame(BCAST, mac(3), b"three")
            s3.close()
            s2.close()
        assert not os.path.exists(p1) and not os.path.exists(p2)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_stream_real_qemu():
    """A stock QEMU -netdev stream (client) on the switch's --stream socket:
    frames the switch sends reach QEMU (its filter-dump is the witness), and
    QEMU quitting removes the port.  QEMU runs (a stopped VM takes no frames)
    and the stream's peer is a hub with a spare port, not a NIC: a NIC with
    no guest driver refuses frames, and QEMU then stops reading the socket
    after the first read's frames."""
    if not shutil.which("qemu-system-x86_64") or not shutil.which("tshark"):
        return "SKIP: qemu-system-x86_64 or tshark not installed"
    d = tempfile.mkdtemp(prefix="cnuas-vs-qemu-")
    try:
        path = os.path.join(d, "sw.stream")
        pcap = os.path.join(d, "qemu.pcap")
        with Switch("--stream", path) as sw:
            a = sw.port()
            sw.wait_ports(1)
            q = subprocess.Popen(
                ["qemu-system-x86_64", "-nodefaults", "-display", "none", "-M", "pc",
                 "-m", "32", "-accel", "tcg", "-netdev",
                 "stream,id=n0,server=off,addr.type=unix,addr.path=%s" % path,
                 "-netdev", "hubport,id=h0,hubid=0,netdev=n0",
                 "-netdev", "hubport,id=h1,hubid=0",
                 "-object", "filter-dump,id=f0,netdev=n0,file=%s" % pcap],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                deadline = time.time() + 30
                while len(sw.show()["ports"]) < 2:
                    assert q.poll() is None, "QEMU failed to start"
                    assert time.time() < deadline, "QEMU did not connect"
                    time.sleep(0.1)
                st = _stream_port_id(sw)
                for i in range(3):      # apart, so QEMU reads each on its own
                    a.send(frame(BCAST, mac(0x77), b"hello-qemu-%d" % i))
                    time.sleep(0.1)
                deadline = time.time() + 10
                while sw.counters(st)["tx_frames"] < 3:
                    assert time.time() < deadline, sw.counters(st)
                    time.sleep(0.1)
                time.sleep(0.5)
            finally:
                q.terminate()
                q.wait(10)
            sw.wait_ports(1)
        rows = _tshark(pcap, "eth.src", "eth.dst")
        assert rows.count(["02:00:00:00:00:77", "ff:ff:ff:ff:ff:ff"]) == 3, rows
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_bad_frames():
    with Switch() as sw:
        a, b = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        a.send(b"")                                # empty
        a.send(b"\x01\x02\x03\x04\x05")            # runt
        a.send(frame(BCAST, mac(1), b"j" * (9216 - 14 + 1)))   # too big
        a.send(frame(BCAST, bytes.fromhex("030000000001"), b"mc-src"))  # multicast source
        a.send(frame(BCAST, mac(1), b"j" * (9216 - 14)))        # largest valid
        got = b.recv(65536)
        assert len(got) == 9216, len(got)
        expect_none(b, "bad frame forwarded")
        c = sw.counters(ids[0])
        assert c["drop_bad_size"] == 2 and c["drop_runt"] == 1 and c["drop_bad_src"] == 1, c
        assert sw.show()["ports"][0]["state"] == "up"


def test_ctl_json_and_errors():
    with Switch() as sw:
        a = sw.port()
        pid = sw.wait_ports(1)[0]
        # every command's JSON is valid (python3 -m json.tool as the checker)
        for args in (["show"], ["fdb"], ["counters"], ["counters", str(pid)],
                     ["fault", str(pid), "drop=1", "seed=3"], ["fault", str(pid), "clear"]):
            r = sw.vsctl(*args)
            r = subprocess.run([ARGS.vsctl, "--ctl", sw.ctl, "--json"] + args, capture_output=True)
            assert r.returncode == 0, r
            v = subprocess.run([sys.executable, "-m", "json.tool"], input=r.stdout,
                               capture_output=True)
            assert v.returncode == 0, (args, r.stdout)
        # errors: exit 1 from the switch, 2 for usage, 3 unreachable
        for args, rc, msg in (
                (["bogus"], 2, "unknown command"),
                ([], 2, "no command"),
                (["--nope", "show"], 2, "unknown option"),
                (["counters", "99"], 1, "no port 99"),
                (["counters", "x1"], 1, "bad port"),
                (["fault", str(pid), "drop=200"], 1, "bad value"),
                (["fault", str(pid), "jitter=5"], 1, "unknown fault key"),
                (["fault", str(pid), "drop"], 1, "key=value"),
                (["capture", "stop"], 1, "no capture"),
                (["capture", "begin", "x"], 1, "usage"),
                (["capture", "start", "/nonexistent-dir/x.pcap"], 1, "cannot create"),
                (["add-dgram", sw.dir + "/x", sw.dir + "/x"], 1, "differ"),
                (["add-dgram", "/tmp/x", "/tmp/y"], 1, "must be in the directory"),
                (["show", "extra"], 2, "wrong number")):
            r = sw.vsctl(*args, expect=rc)
            assert msg in r.stderr, (args, r.stderr)
        r = subprocess.run([ARGS.vsctl, "--ctl", sw.dir + "/nothing", "show"], capture_output=True,
                           text=True)
        assert r.returncode == 3 and "cannot reach" in r.stderr, r
        # raw protocol garbage gets an error, the switch stays up
        for junk in (b"hello\n", b"CNUAS-CTL 1\nxml\nshow\n", b"CNUAS-CTL 1\njson\n",
                     b"\0\0\0", b"CNUAS-CTL 1\ntext\n" + b"x\n" * 100, b"z" * 70000):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sw.ctl)
            try:
                s.sendall(junk)
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            s.settimeout(5)
            resp = s.recv(4096)
            s.close()
            assert resp.startswith(b"ERR "), (junk[:20], resp)
        assert sw.show()["ports"][0]["id"] == pid
        a.send(frame(BCAST, mac(1)))
        r = sw.vsctl("shutdown", json_out=True)
        assert r == {"shutdown": True}
        assert sw.proc.wait(10) == 0


def test_daemon_flags():
    d = tempfile.mkdtemp(prefix="cnuas-vs-flags-")
    try:
        s = os.path.join(d, "s")
        for args, msg in ((["--link-layer", "ib", "--tap", "t0"], "Ethernet only"),
                          (["--link-layer", "fc"], "unknown link layer"),
                          (["--aging", "abc"], "--aging"),
                          (["--queue-frames", "1"], "--queue-frames"),
                          (["--dgram", "nopath"], "--dgram"),
                          (["--bogus"], "unknown option"),
                          (["extra"], "unexpected argument")):
            r = subprocess.run([ARGS.switch, "--socket", s, "--foreground"] + args,
                               capture_output=True, text=True, timeout=10)
            assert r.returncode == 2 and msg in r.stderr, (args, r.returncode, r.stderr)
        r = subprocess.run([ARGS.switch, "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "--socket" in r.stdout
        # a path that is not a socket is never removed; a live switch is not stolen
        open(s, "w").close()
        r = subprocess.run([ARGS.switch, "--socket", s, "--foreground"], capture_output=True,
                           text=True, timeout=10)
        assert r.returncode == 1 and "not a socket" in r.stderr, r.stderr
        os.unlink(s)
        with Switch() as sw:
            r = subprocess.run([ARGS.switch, "--socket", sw.sock, "--ctl", s, "--foreground"],
                               capture_output=True, text=True, timeout=10)
            assert r.returncode == 1 and "in use" in r.stderr, r.stderr
            assert sw.proc.poll() is None
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_random_traffic_survives():
    """Hostile mix for a few seconds: random sizes and addresses, faults
    changing, ports coming and going, a slow reader. The switch must stay
    up, answer, and exit cleanly with no sanitizer report."""
    import random
    rnd = random.Random(1234)
    with Switch("--queue-frames", "16", "--aging", "2") as sw:
        stop = threading.Event()
        macs = [mac(i) for i in range(1, 6)] + [BCAST, bytes.fromhex("01005e0000fb"),
                                                 bytes.fromhex("030000000001")]

        def drain(s, slow):
            while not stop.is_set():
                try:
                    s.settimeout(0.2)
                    s.recv(65536)
                    if slow:
                        time.sleep(0.002)
                except (socket.timeout, OSError):
                    if s.fileno() < 0:
                        return
        socks = []
        for i in range(5):
            s = sw.port()
            socks.append(s)
            threading.Thread(target=drain, args=(s, i == 4), daemon=True).start()
        deadline = time.time() + 4
        n = 0
        while time.time() < deadline:
            s = rnd.choice(socks)
            size = rnd.choice([0, 1, 13, 14, 60, 64, 1500, 4096, 9216, 9217, rnd.randrange(0, 9300)])
            f = rnd.choice(macs) + rnd.choice(macs) + os.urandom(max(0, size - 12))
            f = f[:size]
            try:
                s.setblocking(False)
                s.send(f)
            except (BlockingIOError, OSError):
                pass
            n += 1
            if n % 500 == 0:
                ids = sw.port_ids()
                pid = rnd.choice(ids)
                r = sw.vsctl("fault", str(pid), "drop=%d" % rnd.randrange(0, 30),
                             "corrupt=%d" % rnd.randrange(0, 30),
                             "reorder=%d" % rnd.randrange(0, 30),
                             "delay=%d" % rnd.choice([0, 0, 5]), "seed=%d" % n, expect=None)
                # a port we closed may still be finishing (listed, then gone)
                assert r.returncode == 0 or "no port" in r.stderr, r.stderr
                if rnd.random() < 0.5:
                    victim = socks.pop(rnd.randrange(len(socks)))
                    victim.close()
                    sw.ports.remove(victim)
                    s = sw.port()
                    socks.append(s)
                    threading.Thread(target=drain, args=(s, False), daemon=True).start()
        stop.set()
        time.sleep(0.3)
        show = sw.show()
        assert len(show["ports"]) == 5, show
        tx = sum(p["counters"]["tx_frames"] for p in show["ports"])
        bad = sum(p["counters"]["drop_bad_size"] + p["counters"]["drop_runt"] for p in show["ports"])
        assert tx > 100 and bad > 0, show
        sw.vsctl("fdb", json_out=True)
        sw.vsctl("counters", json_out=True)


def test_fdb_table():
    r = subprocess.run([ARGS.fdb_test], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_port_security():
    """One guest can neither take another's MAC nor fill the FDB."""
    with Switch("--port-security", "--aging", "1") as sw:
        a, b, c = sw.port(), sw.port(), sw.port()
        ids = sw.wait_ports(3)
        learn(sw, [a, b, c])
        # c claims a's MAC: dropped, a keeps its unicast
        c.send(frame(BCAST, mac(1), b"spoof"))
        expect_none(a, "spoofed broadcast")
        expect_none(b, "spoofed broadcast")
        assert sw.counters(ids[2])["drop_mac_spoof"] == 1
        b.send(frame(mac(1), mac(2), b"for-a"))
        assert a.recv(65536).endswith(b"for-a")
        expect_none(c, "unicast stolen by a spoofer")
        # pinned entries do not age
        time.sleep(2.2)
        fdb = {e["mac"]: e for e in sw.vsctl("fdb", json_out=True)["fdb"]}
        assert fdb["02:00:00:00:00:01"]["port"] == ids[0] and fdb["02:00:00:00:00:01"]["pinned"]
        # c may use 4 MACs (its own and 3 more), then new sources are dropped
        for n in range(20, 40):
            c.send(frame(BCAST, mac(n), b"flood-fdb"))
        got = 0
        while recv_or_none(a) is not None:
            got += 1
        assert got == 3, got
        drain = 0
        while recv_or_none(b) is not None:
            drain += 1
        cnt = sw.counters(ids[2])
        assert cnt["drop_mac_limit"] == 17, cnt
        show = {p["id"]: p for p in sw.show()["ports"]}
        assert show[ids[2]]["macs_learned"] == 4 and show[ids[0]]["macs_learned"] == 1
        assert show[ids[2]]["port_security"] == {"pin": True, "macs": 4}
        # the limit and the pin are settings of each port
        r = sw.vsctl("set-port-security", "--port", str(ids[2]), "macs=5", json_out=True)
        assert r["port_security"] == {"pin": True, "macs": 5}
        c.send(frame(BCAST, mac(50), b"fifth"))
        assert a.recv(65536).endswith(b"fifth")
        b.recv(65536)
        sw.vsctl("set-port-security", "--port", str(ids[0]), "pin=off")
        c.send(frame(BCAST, mac(1), b"still-pinned-elsewhere"))   # c is at its limit
        expect_none(a, "frame over c's limit")
        assert sw.counters(ids[2])["drop_mac_limit"] == 18
        sw.vsctl("set-port-security", "--port", str(ids[2]), "macs=0")
        c.send(frame(BCAST, mac(1), b"moved"))    # a no longer pins it: moves
        assert b.recv(65536).endswith(b"moved")
        assert a.recv(65536).endswith(b"moved")    # a broadcast reaches a too
        for bad in (["macs=-1"], ["macs=x"], ["pin=maybe"], ["--port", "99", "pin=on"]):
            sw.vsctl("set-port-security", *bad, expect=1)
        # a port that goes away frees its pinned MACs
        b.close()
        sw.ports.remove(b)
        sw.wait_ports(2)
        c.send(frame(BCAST, mac(2), b"b-is-gone"))
        assert a.recv(65536).endswith(b"b-is-gone")
    # without --port-security a station still moves freely
    with Switch() as sw:
        assert sw.show()["port_security_all"] == {"pin": False, "macs": 0}


def test_port_security_mac_moves():
    """A migrated guest: its new port (a new QEMU) may take its pinned MAC
    only once the old port has closed; before that the frames are refused
    and counted. A closing old port still delivers what it had sent, but
    learns nothing, so the new port has the MAC at once."""
    with Switch("--port-security", "--queue-frames", "16") as sw:
        old, peer = sw.port(timeout=30), sw.port(timeout=30)
        ids = sw.wait_ports(2)
        learn(sw, [old, peer])
        new = sw.port(timeout=30)
        new_id = sw.wait_ports(3)[2]
        # the new QEMU is connected while the old one still runs: refused
        new.send(frame(mac(2), mac(1), b"too-early"))
        expect_none(peer, "frame from a MAC pinned to the old port")
        assert sw.counters(new_id)["drop_mac_spoof"] == 1
        peer.send(frame(mac(1), mac(2), b"to-old"))
        assert old.recv(65536).endswith(b"to-old")
        expect_none(new, "unicast to the old port")
        # the old port blasts the peer (who does not read) until paused, closes
        t, sent = _blast_until_paused(sw, old, ids[0], mac(2), 100000)
        old.shutdown(socket.SHUT_RDWR)
        t.join(10)
        old.close()
        sw.ports.remove(old)
        # a few frames move on: the closing port is read again, then pauses
        for i in range(8):
            assert struct.unpack("!I", peer.recv(65536)[14:18])[0] == i
        ports = {p["id"]: p for p in sw.show()["ports"]}
        assert ids[0] in ports, "old port gone before its frames were delivered"
        fdb = {e["mac"]: e for e in sw.vsctl("fdb", json_out=True)["fdb"]}
        assert "02:00:00:00:00:01" not in fdb, fdb    # released, not re-learned
        # the new port takes the MAC at once, while the old one drains
        new.send(frame(BCAST, mac(1), b"moved"))
        deadline = time.time() + 5
        while True:
            fdb = {e["mac"]: e for e in sw.vsctl("fdb", json_out=True)["fdb"]}
            e = fdb.get("02:00:00:00:00:01")
            if e:
                break
            assert time.time() < deadline, "new port never learned the MAC"
            time.sleep(0.02)
        assert e["port"] == new_id and e["pinned"], e
        assert sw.counters(new_id)["drop_mac_spoof"] == 1
        # what the old port had sent moves on in order until the new port
        # took the MAC; the rest comes from a MAC pinned elsewhere now and
        # is refused (counted on the closing port until it is removed)
        got, spoofed = 8, 0
        while True:
            f = recv_or_none(peer, 2)
            if f is None:
                break
            if f.endswith(b"moved"):    # the broadcast, if it found room
                continue
            assert struct.unpack("!I", f[14:18])[0] == got, got
            got += 1
            ports = {p["id"]: p for p in sw.show()["ports"]}
            if ids[0] in ports:
                spoofed = ports[ids[0]]["counters"]["drop_mac_spoof"]
        assert got <= sent[0], (got, sent[0])
        assert got == sent[0] or spoofed > 0 or ids[0] not in ports, (got, sent[0])
        sw.wait_ports(2)
        # the new port keeps the MAC after the old one is cleaned up
        peer.send(frame(mac(1), mac(2), b"to-new"))
        f = new.recv(65536)
        while not f.endswith(b"to-new"):
            f = new.recv(65536)
        fdb = {e["mac"]: e for e in sw.vsctl("fdb", json_out=True)["fdb"]}
        assert fdb["02:00:00:00:00:01"]["port"] == new_id, fdb
        assert sw.counters(new_id)["drop_mac_spoof"] == 1


# A peer process whose command line is a QEMU's: it connects to the
# switch (so SO_PEERCRED names it) and hands the socket back over fd argv[2].
_QEMU_PEER = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
back = socket.socket(fileno=int(sys.argv[2]))
socket.send_fds(back, [b"up"], [s.fileno()])
sys.stdin.read()
"""


class QemuPeer:
    """A port whose peer's argv carries args (e.g. -device cnuas-vnic,...)."""

    def __init__(self, sw, *args):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _QEMU_PEER, sw.sock, str(theirs.fileno()), *args],
            stdin=subprocess.PIPE, pass_fds=[theirs.fileno()])
        theirs.close()
        mine.settimeout(10)
        _, fds, _, _ = socket.recv_fds(mine, 16, 1)
        mine.close()
        self.sock = socket.socket(fileno=fds[0])
        self.sock.settimeout(5)
        sw.ports.append(self.sock)
        self.id = max(sw.port_ids())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def _vnic(sock, mac_s, json_form=False, extra=""):
    if json_form:
        return json.dumps({"driver": "cnuas-vnic", "id": "nic0", "bus": "rp1",
                           "socket_path": sock, "mac": mac_s, "link_layer": "eth"})
    return "cnuas-vnic,id=nic0,bus=rp1,socket_path=%s,mac=%s,link_layer=eth%s" % (
        sock, mac_s, extra)


def _recv_until(s, tail):
    """The next frame that ends with tail (broadcasts before it are skipped)."""
    f = s.recv(65536)
    while not f.endswith(tail):
        f = s.recv(65536)
    return f


def _fdb(sw):
    return {e["mac"]: e for e in sw.vsctl("fdb", json_out=True)["fdb"]}


def test_port_given_macs():
    """A QEMU port may send only from the MACs its cnuas-vnic devices on
    this switch were given on the command line (-device key=value or JSON),
    and nobody else can claim them, even before they ever sent. A migration's
    destination QEMU (same mac=) gets them once the source goes."""
    m1, m7 = "02:00:00:00:00:01", "02:00:00:00:00:07"
    with Switch("--port-security") as sw:
        peers = []
        try:
            g = QemuPeer(sw, "-name", "guest=vm1", "-device", _vnic(sw.sock, m1),
                         "-device", _vnic("/elsewhere/switch.sock", "02:00:00:00:00:33"),
                         "-device", "virtio-net-pci,mac=02:00:00:00:00:44")
            j = QemuPeer(sw, "-device", _vnic(sw.sock, m7, json_form=True))
            peers += [g, j]
            b, c = sw.port(), sw.port()
            ids = sw.wait_ports(4)
            b_id, c_id = ids[2], ids[3]
            show = {p["id"]: p for p in sw.show()["ports"]}
            assert show[g.id]["assigned_macs"] == {"from": "given", "macs": [m1]}, show[g.id]
            assert show[j.id]["assigned_macs"] == {"from": "given", "macs": [m7]}, show[j.id]
            assert show[b_id]["assigned_macs"] == {"from": "none", "macs": []}
            assert "port %d MACs (given): %s" % (g.id, m1) in sw.vsctl("show").stdout
            # reserved at connect, before either ever sent
            fdb = _fdb(sw)
            assert fdb[m1]["port"] == g.id and fdb[m1]["pinned"], fdb
            assert fdb[m7]["port"] == j.id and fdb[m7]["pinned"], fdb
            for spoofed in (mac(1), mac(7)):
                c.send(frame(BCAST, spoofed, b"claim"))
                expect_none(b, "a claim of a given MAC")
            assert sw.counters(c_id)["drop_mac_spoof"] == 2
            # a given port sends only from its own
            g.sock.send(frame(BCAST, mac(5), b"other-mac"))
            j.sock.send(frame(BCAST, mac(1), b"neighbours-mac"))
            expect_none(b, "a frame from a MAC the port was not given")
            assert sw.counters(g.id)["drop_mac_not_assigned"] == 1
            assert sw.counters(j.id)["drop_mac_not_assigned"] == 1
            g.sock.send(frame(BCAST, mac(1), b"own"))
            assert b.recv(65536).endswith(b"own")
            b.send(frame(mac(7), mac(2), b"to-j"))
            _recv_until(j.sock, b"to-j")
            # a migration: the destination QEMU has the same mac=; the MAC
            # stays with the source until it goes, then is the destination's
            d = QemuPeer(sw, "-device", _vnic(sw.sock, m1))
            peers.append(d)
            assert _fdb(sw)[m1]["port"] == g.id
            d.sock.send(frame(BCAST, mac(1), b"too-early"))
            expect_none(b, "a frame from a MAC the source port still has")
            assert sw.counters(d.id)["drop_mac_spoof"] == 1
            sw.vsctl("handover", str(g.id))
            sw.wait_ports(4)
            fdb = _fdb(sw)
            assert fdb[m1]["port"] == d.id and fdb[m1]["pinned"], fdb
            c.send(frame(BCAST, mac(1), b"claim-in-the-gap"))
            expect_none(b, "a claim of a MAC during a hand-over")
            b.send(frame(mac(1), mac(2), b"to-dest"))
            _recv_until(d.sock, b"to-dest")
            assert sw.counters(d.id)["drop_mac_not_assigned"] == 0
            # pin=off: the list is kept but not enforced
            sw.vsctl("set-port-security", "--port", str(d.id), "pin=off")
            assert "not enforced" in sw.vsctl("show").stdout
            d.sock.send(frame(BCAST, mac(9), b"pin-off"))
            _recv_until(b, b"pin-off")
        finally:
            for p in peers:
                p.close()


def test_port_given_macs_hostile_cmdline():
    """A command line the switch cannot read for certain gives no MACs:
    the port falls back to first-come pinning (and the switch survives)."""
    with Switch("--port-security") as sw:
        s = sw.sock
        cases = [
            ["-device", "cnuas-vnic,socket_path=%s" % s],                       # no mac=
            ["-device", _vnic(s, "zz:00:00:00:00:01")],                         # bad mac
            ["-device", _vnic(s, "03:00:00:00:00:01")],                         # group address
            ["-device", _vnic(s, "02:00:00:00:00:01", extra=",mac=02:00:00:00:00:02")],
            ["-device", _vnic(s, "02:00:00:00:00:01").replace("socket_path", "socket_path=x,socket_path")],
            ["-device", '{"driver":"cnuas-vnic","socket_path":"%s","mac":"02:00:00:00:00:01"' % s],
            ["-device", '{"driver":"cnuas-vnic","socket_path":"%s","mac":7}' % s],
            ["-device", '{"driver":"cnuas-vnic","socket_path":"%s","mac":"02:00:00:00:00:0\\u0031"}' % s],
            ["-device", '{"driver":"cnuas-vnic","x":[[[' + "[" * 100 + "]}"],
            ["-device", _vnic(s + "x", "02:00:00:00:00:01")],                   # another socket
            ["A" * 70000, "-device", _vnic(s, "02:00:00:00:00:01")],           # past 64 KiB
            sum([["-device", _vnic(s, "02:00:00:00:01:%02x" % i)] for i in range(9)], []),  # > 8
        ]
        peers = []
        try:
            for args in cases:
                peers.append(QemuPeer(sw, *args))
            b = sw.port()
            show = {p["id"]: p for p in sw.show()["ports"]}
            for p, args in zip(peers, cases):
                assert show[p.id]["assigned_macs"]["from"] == "none", (args[:2], show[p.id])
            assert _fdb(sw) == {}
            # first-come as before: each may use a MAC nobody has
            for i, p in enumerate(peers):
                p.sock.send(frame(BCAST, mac(0x100 + i), b"first-come"))
                assert b.recv(65536).endswith(b"first-come")
            assert len(_fdb(sw)) == len(peers)
        finally:
            for p in peers:
                p.close()


def test_port_static_macs():
    """set-port-security --port ID mac=LIST: a dgram port (no QEMU command
    line to read) sends only from its list, which is pinned at once."""
    d = tempfile.mkdtemp(prefix="cnuas-vs-smac-")
    try:
        sw_path, q_path = os.path.join(d, "sw.dgram"), os.path.join(d, "qemu.dgram")
        q = _dgram_sock(q_path)
        with Switch("--port-security", "--dgram", "%s=%s" % (sw_path, q_path)) as sw:
            a = sw.port()
            ids = sw.wait_ports(2)
            dg = [p["id"] for p in sw.show()["ports"] if p["kind"] == "dgram"][0]
            a_id = [i for i in ids if i != dg][0]
            r = sw.vsctl("set-port-security", "--port", str(dg),
                         "mac=02:00:00:00:00:09,02:00:00:00:00:0A", json_out=True)
            assert r["assigned_macs"] == {"from": "static",
                                          "macs": ["02:00:00:00:00:09", "02:00:00:00:00:0a"]}, r
            assert r["port_security"]["pin"] is True, r
            fdb = _fdb(sw)
            assert fdb["02:00:00:00:00:0a"]["port"] == dg and fdb["02:00:00:00:00:0a"]["pinned"]
            a.send(frame(BCAST, mac(9), b"claim"))
            time.sleep(0.2)
            assert sw.counters(a_id)["drop_mac_spoof"] == 1
            q.sendto(frame(BCAST, mac(8), b"not-listed"), sw_path)
            expect_none(a, "a frame from a MAC not in the static list")
            assert sw.counters(dg)["drop_mac_not_assigned"] == 1
            q.sendto(frame(BCAST, mac(9), b"listed"), sw_path)
            assert a.recv(65536).endswith(b"listed")
            a.send(frame(mac(10), mac(1), b"to-listed"))
            assert q.recv(65536).endswith(b"to-listed")
            for bad in (["--port", str(dg), "mac=zz"], ["mac=02:00:00:00:00:01"],
                        ["--port", str(dg), "mac=02:00:00:00:00:01", "pin=off"],
                        ["--port", str(dg), "mac=01:00:5e:00:00:01"],
                        ["--port", str(dg), "mac=" + ",".join("02:00:00:00:01:%02x" % i
                                                              for i in range(9))]):
                sw.vsctl("set-port-security", *bad, expect=1)
            # mac=none: first-come again, the list's MACs are free
            r = sw.vsctl("set-port-security", "--port", str(dg), "mac=none", json_out=True)
            assert r["assigned_macs"] == {"from": "none", "macs": []}, r
            assert _fdb(sw).get("02:00:00:00:00:09", {}).get("port") != dg
            a.send(frame(BCAST, mac(9), b"now-mine"))
            assert q.recv(65536).endswith(b"now-mine")
        q.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_del_port():
    """del-port hangs a guest port up at once: its pinned MAC is free for
    the next port (a migrated guest's new QEMU), its peer sees the end."""
    with Switch("--port-security") as sw:
        old, peer = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        learn(sw, [old, peer])
        new = sw.port()
        new_id = sw.wait_ports(3)[2]
        new.send(frame(mac(2), mac(1), b"too-early"))
        expect_none(peer, "frame from a MAC pinned to the old port")
        r = sw.vsctl("del-port", str(ids[0]), json_out=True)
        assert r == {"removed": ids[0]}, r
        assert old.recv(65536) == b"", "the old port's peer did not see the end"
        sw.wait_ports(2)
        new.send(frame(mac(2), mac(1), b"moved"))
        assert peer.recv(65536).endswith(b"moved")
        peer.send(frame(mac(1), mac(2), b"to-new"))
        assert new.recv(65536).endswith(b"to-new")
        assert sw.counters(new_id)["drop_mac_spoof"] == 1
        for bad in (["99"], ["x"], ["0"]):
            sw.vsctl("del-port", *bad, expect=1)


def test_ctl_hardening():
    """The control socket may not be used to reach files outside the switch's own."""
    d = tempfile.mkdtemp(prefix="cnuas-vs-hard-")
    try:
        # socket modes do not depend on the umask the daemon inherited
        with Switch(umask=0) as sw:
            assert stat.S_IMODE(os.stat(sw.ctl).st_mode) == 0o600
            assert stat.S_IMODE(os.stat(sw.sock).st_mode) == 0o660
            # capture never truncates a file nor follows a link
            victim = os.path.join(d, "victim")
            with open(victim, "w") as f:
                f.write("keep me")
            sw.vsctl("capture", "start", victim, expect=1)
            link = os.path.join(sw.dir, "link.pcap")
            os.symlink(victim, link)
            sw.vsctl("capture", "start", link, expect=1)
            with open(victim) as f:
                assert f.read() == "keep me"
            assert sw.show()["capture"] is None
            # add-dgram binds only beside the switch's own socket, and
            # never removes a stale socket elsewhere
            stale = os.path.join(d, "stale.sock")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.bind(stale)
            s.close()
            sw.vsctl("add-dgram", stale, os.path.join(d, "q"), expect=1)
            assert stat.S_ISSOCK(os.lstat(stale).st_mode)
            sw.vsctl("add-dgram", os.path.join(d, "new.sock"), os.path.join(d, "q"), expect=1)
            assert not os.path.exists(os.path.join(d, "new.sock"))
            ok = os.path.join(sw.dir, "ok.dgram")
            sw.vsctl("add-dgram", ok, os.path.join(d, "q"))
            assert stat.S_IMODE(os.stat(ok).st_mode) == 0o660
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- TAP ports: the host's own network stack on a switch port ----

def _ip(*args, ns=None, check=True):
    cmd = ["ip"] + (["-n", ns] if ns else []) + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and r.returncode:
        raise AssertionError("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    return r


def _tap_skip():
    if os.geteuid() != 0:
        return "SKIP not root (TAP interfaces and network namespaces need CAP_NET_ADMIN)"
    if not os.path.exists("/dev/net/tun"):
        return "SKIP no /dev/net/tun"
    if not shutil.which("ip"):
        return "SKIP no ip(8) (iproute2)"
    return None


def _csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def _ipv4(src, dst, proto, payload):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack("!H", _csum(h)) + h[12:] + payload


def _arp_request(smac, sip, tip):
    return frame(BCAST, smac, struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, smac,
                                          socket.inet_aton(sip), b"\0" * 6,
                                          socket.inet_aton(tip)), 0x0806)


def _icmp_echo(dmac, smac, sip, dip, ident, payload):
    icmp = struct.pack("!BBHHH", 8, 0, 0, ident, 1) + payload
    icmp = icmp[:2] + struct.pack("!H", _csum(icmp)) + icmp[4:]
    return frame(dmac, smac, _ipv4(sip, dip, 1, icmp), 0x0800)


def _recv_match(s, pred, what, timeout=5.0):
    """The next frame on s for which pred is true (others, e.g. IPv6 router
    solicitations from the namespace, are skipped)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        f = recv_or_none(s, timeout=max(0.05, deadline - time.time()))
        if f is not None and pred(f):
            return f
    raise AssertionError("no %s within %.0f s" % (what, timeout))


def _resolve(s, smac, sip, tip):
    """ARP for tip from (smac, sip) through s; the answerer's MAC."""
    s.send(_arp_request(smac, sip, tip))
    f = _recv_match(s, lambda f: f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x02"
                    and f[28:32] == socket.inet_aton(tip), "ARP reply from " + tip)
    return f[22:28]


def _ping(s, smac, dmac, sip, dip, payload):
    ident = os.getpid() & 0xffff
    s.send(_icmp_echo(dmac, smac, sip, dip, ident, payload))
    f = _recv_match(s, lambda f: f[12:14] == b"\x08\x00" and f[23] == 1 and f[34] == 0
                    and f[38:40] == struct.pack("!H", ident), "ICMP echo reply from " + dip)
    assert f[42:42 + len(payload)] == payload, "echo reply payload differs"


class _Netns:
    def __init__(self, tag):
        self.name = "cnuas-vs-%s-%d" % (tag, os.getpid())
        _ip("netns", "add", self.name)

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        _ip("netns", "del", self.name, check=False)


def test_tap_port():
    skip = _tap_skip()
    if skip:
        return skip
    tap = "cvt%d" % (os.getpid() % 100000)
    with _Netns("tap") as ns, Switch("--tap", tap) as sw:
        st = sw.port()
        ports = sw.wait_ports(2)
        t = [p for p in sw.show()["ports"] if p["kind"] == "tap"]
        assert len(t) == 1 and t[0]["peer"] == tap and t[0]["state"] == "up", t
        tap_id = t[0]["id"]
        assert "UP" in _ip("link", "show", tap).stdout.split("<")[1], "the switch sets its TAP up"
        # the same interface again is in use; a bad name is refused
        r = sw.vsctl("add-tap", tap, expect=1)
        assert "busy" in r.stderr.lower(), r.stderr
        r = sw.vsctl("add-tap", "bad/name", expect=1)
        assert "not a valid interface name" in r.stderr, r.stderr
        # the host's stack answers ARP and ping through the TAP
        _ip("link", "set", tap, "netns", ns.name)
        _ip("addr", "add", "192.0.2.1/24", "dev", tap, ns=ns.name)
        _ip("link", "set", tap, "up", ns=ns.name)
        tap_mac = _resolve(st, mac(1), "192.0.2.2", "192.0.2.1")
        payload = bytes(range(256)) * 4
        _ping(st, mac(1), tap_mac, "192.0.2.2", "192.0.2.1", payload)
        c = sw.counters(tap_id)
        assert c["rx_frames"] >= 2 and c["tx_frames"] >= 2, c
        # a TAP that is down refuses frames: counted, the port stays
        _ip("link", "set", tap, "down", ns=ns.name)
        st.send(frame(BCAST, mac(1), b"to-a-down-link"))
        deadline = time.time() + 5
        while sw.counters(tap_id)["drop_link_down"] < 1:
            assert time.time() < deadline, sw.counters(tap_id)
            time.sleep(0.05)
        _ip("link", "set", tap, "up", ns=ns.name)
        # (link down flushed the namespace's neighbours: our ARP request refills it)
        assert _resolve(st, mac(1), "192.0.2.2", "192.0.2.1") == tap_mac
        _ping(st, mac(1), tap_mac, "192.0.2.2", "192.0.2.1", b"after-link-up")
        # deleting the interface removes the port
        _ip("link", "del", tap, ns=ns.name)
        sw.wait_ports(1)
        assert sw.port_ids() == [i for i in ports if i != tap_id]


def test_tap_vxlan_two_hosts():
    """Two switches on two 'hosts' (network namespaces joined by a veth
    underlay), each with its TAP in a Linux bridge with a VXLAN port: a
    station on one switch reaches a station on the other, jumbo frames and
    RoCEv2 (UDP 4791) included."""
    skip = _tap_skip()
    if skip:
        return skip
    if _ip("link", "add", "cvx-probe", "type", "vxlan", "id", "1", "dstport", "4789",
           check=False).returncode:
        return "SKIP the kernel has no VXLAN (vxlan module)"
    _ip("link", "del", "cvx-probe", check=False)
    pid = os.getpid() % 100000
    with _Netns("a") as na, _Netns("b") as nb, \
            Switch("--port-security", "--tap", "cva%d" % pid) as swa, \
            Switch("--port-security", "--tap", "cvb%d" % pid) as swb:
        _ip("link", "add", "cvu%d" % pid, "mtu", "9000", "type", "veth", "peer", "name",
            "cvv%d" % pid, "mtu", "9000")
        for ns, dev, ip, tap, remote in ((na, "cvu%d" % pid, "198.51.100.1", "cva%d" % pid,
                                          "198.51.100.2"),
                                         (nb, "cvv%d" % pid, "198.51.100.2", "cvb%d" % pid,
                                          "198.51.100.1")):
            _ip("link", "set", dev, "netns", ns.name)
            _ip("link", "set", tap, "netns", ns.name)
            n = ns.name
            _ip("addr", "add", ip + "/24", "dev", dev, ns=n)
            _ip("link", "set", dev, "up", ns=n)
            _ip("link", "add", "vx0", "mtu", "8950", "type", "vxlan", "id", "42", "local", ip,
                "remote", remote, "dstport", "4789", ns=n)
            _ip("link", "add", "br0", "type", "bridge", ns=n)
            _ip("link", "set", tap, "mtu", "8950", ns=n)
            for d in ("vx0", tap):
                _ip("link", "set", d, "master", "br0", ns=n)
                _ip("link", "set", d, "up", ns=n)
            _ip("link", "set", "br0", "up", ns=n)
        a, b = swa.port(), swb.port()
        swa.wait_ports(2)
        swb.wait_ports(2)
        # b speaks first so the bridges learn it; then unicast both ways
        b.send(frame(BCAST, mac(2), b"hello-from-b"))
        _recv_match(a, lambda f: f.endswith(b"hello-from-b"), "b's broadcast at a")
        for size in (60, 1500, 4200, 8900):
            body = bytes((i * 7 + size) & 0xff for i in range(size - 14))
            a.send(frame(mac(2), mac(1), body))
            got = _recv_match(b, lambda f: f[6:12] == mac(1), "%d-byte frame at b" % size)
            assert got == frame(mac(2), mac(1), body), "frame of %d bytes changed" % size
            b.send(frame(mac(1), mac(2), body))
            got = _recv_match(a, lambda f: f[6:12] == mac(2), "%d-byte frame at a" % size)
            assert got == frame(mac(1), mac(2), body), "frame of %d bytes changed" % size
        # a RoCEv2 frame crosses the tunnel unchanged (VXLAN adds its own UDP/4789);
        # its IPv4 checksum must be right, as a real one is: the receiving
        # host drops a bad one
        rf, _ = roce_frame(mac(2), mac(1), bytes(4096))
        rf = rf[:24] + struct.pack("!H", _csum(rf[14:24] + rf[26:34])) + rf[26:]
        a.send(rf)
        assert _recv_match(b, lambda f: f[6:12] == mac(1), "RoCE frame at b") == rf
        ca = swa.counters([p["id"] for p in swa.show()["ports"] if p["kind"] == "tap"][0])
        assert ca["drop_link_down"] == 0 and ca["tx_frames"] >= 5, ca
        # port security: the TAP is an uplink, many stations behind it are
        # fine (more than --port-security's 4), but none may use a MAC
        # pinned to a local port
        more = [swb.port() for _ in range(5)]
        swb.wait_ports(7)
        for i, s in enumerate(more):
            s.send(frame(BCAST, mac(10 + i), b"station-%d" % i))
            _recv_match(a, lambda f, i=i: f.endswith(b"station-%d" % i), "station %d at a" % i)
        more[0].send(frame(BCAST, mac(1), b"spoofed-a"))
        b.send(frame(BCAST, mac(2), b"after-spoof"))
        got = _recv_match(a, lambda f: f[6:12] in (mac(1), mac(2)), "b's frame after the spoof")
        assert got.endswith(b"after-spoof"), "a got a frame with its own MAC as source"
        tap_a = [p for p in swa.show()["ports"] if p["kind"] == "tap"][0]
        c = tap_a["counters"]
        assert c["drop_mac_limit"] == 0 and c["drop_mac_spoof"] == 1, c


# ------------------------------------------------------------ traffic classes

def vlan_frame(dst, src, pcp, payload, vid=5):
    return dst + src + struct.pack("!HHH", 0x8100, pcp << 13 | vid, 0x88B5) + payload


def ip4_frame(dst, src, dscp, payload):
    """An IPv4/UDP frame whose TOS carries dscp (ECN bits set, to be ignored)."""
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, dscp << 2 | 1, 20 + len(payload), 0, 0, 64, 17, 0,
                      bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return dst + src + struct.pack("!H", 0x0800) + hdr + payload


def ip6_frame(dst, src, dscp, payload):
    tclass = dscp << 2 | 2
    first = 6 << 28 | tclass << 20 | 0x12345
    hdr = struct.pack("!IHBB16s16s", first, len(payload), 17, 64, bytes(15) + b"\x01",
                      bytes(15) + b"\x02")
    return dst + src + struct.pack("!H", 0x86DD) + hdr + payload


def qos_of(sw, port_id):
    """(settings, per-class list, per-priority rx list) of a port from show-qos."""
    p = sw.vsctl("show-qos", str(port_id), json_out=True)["ports"][0]
    return p["qos"], p["classes"], p["rx_priority"]


def _wait_for(cond, what, timeout=10):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, what
        time.sleep(0.02)


def roce4_frame(dst, src, dscp, payload, pcp=None):
    """A RoCEv2 frame over IPv4 (UDP 4791, a BTH), VLAN tagged when pcp is set."""
    udp = struct.pack("!HHHH", 49152, 4791, 8 + 12 + len(payload), 0)
    bth = struct.pack("!BBHII", 0x04, 0x40, 0xFFFF, 0x000011, 0x80000001)
    body = udp + bth + payload
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, dscp << 2 | 2, 20 + len(body), 0, 0x4000, 64, 17, 0,
                      bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    tag = b"" if pcp is None else struct.pack("!HH", 0x8100, pcp << 13 | 5)
    return dst + src + tag + struct.pack("!H", 0x0800) + hdr + body


def roce6_frame(dst, src, dscp, payload):
    """A RoCEv2 frame over IPv6."""
    udp = struct.pack("!HHHH", 49152, 4791, 8 + 12 + len(payload), 0)
    bth = struct.pack("!BBHII", 0x04, 0x40, 0xFFFF, 0x000011, 0x80000001)
    first = 6 << 28 | (dscp << 2 | 1) << 20 | 0xabcde
    hdr = struct.pack("!IHBB16s16s", first, 8 + 12 + len(payload), 17, 64,
                      b"\xfe\x80" + bytes(13) + b"\x01", b"\xfe\x80" + bytes(13) + b"\x02")
    return dst + src + struct.pack("!H", 0x86DD) + hdr + udp + bth + payload


def _rx_prio_after(sw, a, b, a_id, sends):
    """Send frames a -> b; the growth of a's per-priority rx frames."""
    before = [r["rx_frames"] for r in qos_of(sw, a_id)[2]]
    for f in sends:
        a.send(f)
        assert b.recv(65536) == f, "frame changed on the way"
    after = [r["rx_frames"] for r in qos_of(sw, a_id)[2]]
    return [y - x for x, y in zip(before, after)]


def test_qos_trust_default_none():
    """The default trust is none: a port's frames claim no priority, whatever
    their PCP or DSCP say, and nothing is capped."""
    with Switch() as sw:
        a, b = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        learn(sw, [a, b])
        q = sw.vsctl("show-qos", json_out=True)
        assert q["trust_all"] == {"mode": "none", "max_prio": 7}, q["trust_all"]
        assert q["ports"][0]["trust"] == {"mode": "none", "max_prio": 7}, q["ports"][0]
        sends = [vlan_frame(mac(2), mac(1), 7, b"p7"), roce4_frame(mac(2), mac(1), 56, b"cs7"),
                 roce6_frame(mac(2), mac(1), 46, b"ef"), frame(mac(2), mac(1), b"plain")]
        assert _rx_prio_after(sw, a, b, ids[0], sends) == [4, 0, 0, 0, 0, 0, 0, 0]
        assert sw.counters(ids[0])["prio_capped"] == 0


def test_qos_trust_pcp():
    """Trust pcp: a tagged frame's priority is its PCP, an untagged one's 0
    (its DSCP is not looked at); the egress port's map picks the queue."""
    with Switch("--qos-trust", "pcp") as sw:
        a, b = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        learn(sw, [a, b])
        sends = [vlan_frame(mac(2), mac(1), pcp, b"p%d" % pcp) for pcp in range(8)]
        sends += [ip4_frame(mac(2), mac(1), 46, b"ef"), ip6_frame(mac(2), mac(1), 63, b"cs7"),
                  roce4_frame(mac(2), mac(1), 26, b"r", pcp=2), frame(mac(2), mac(1), b"plain")]
        got = _rx_prio_after(sw, a, b, ids[0], sends)
        assert got == [4, 1, 2, 1, 1, 1, 1, 1], got
        cls = qos_of(sw, ids[1])[1]
        assert [c["tx_frames"] for c in cls] == [5, 1, 2, 1, 1, 1, 1, 1], cls  # + a's broadcast
        assert sum(c["tx_bytes"] for c in cls) == sw.counters(ids[1])["tx_bytes"]
        sw.vsctl("set-qos", "--port", str(ids[1]), "map=1:2")
        a.send(vlan_frame(mac(2), mac(1), 1, b"x"))
        b.recv(65536)
        cls2 = qos_of(sw, ids[1])[1]
        assert [y["tx_frames"] - x["tx_frames"] for x, y in zip(cls, cls2)] == [0, 0, 1, 0, 0, 0, 0, 0]


def test_qos_trust_dscp_roce():
    """Trust dscp: RoCEv2 frames over IPv4 and IPv6 (tagged or not) get their
    DSCP through the ingress port's map (default DSCP >> 3); a PCP is not
    trusted, non-IP frames are 0."""
    with Switch("--qos-trust", "dscp") as sw:
        a, b = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        learn(sw, [a, b])
        sends = [roce4_frame(mac(2), mac(1), 46, b"ef"),          # EF -> 5
                 roce4_frame(mac(2), mac(1), 26, b"af31", pcp=7), # AF31 -> 3, not the PCP
                 roce6_frame(mac(2), mac(1), 34, b"af41"),        # AF41 -> 4
                 roce6_frame(mac(2), mac(1), 63, b"cs7"),         # -> 7
                 ip4_frame(mac(2), mac(1), 8, b"cs1"),            # -> 1
                 vlan_frame(mac(2), mac(1), 6, b"tagged"),         # not IP -> 0
                 frame(mac(2), mac(1), b"plain")]                 # -> 0
        got = _rx_prio_after(sw, a, b, ids[0], sends)
        assert got == [2, 1, 0, 1, 1, 1, 0, 1], got
        # the ingress port's DSCP map
        sw.vsctl("set-qos", "--port", str(ids[0]), "dscp=26:6,46:1")
        got = _rx_prio_after(sw, a, b, ids[0], [roce4_frame(mac(2), mac(1), 26, b"x"),
                                                 roce6_frame(mac(2), mac(1), 26, b"y"),
                                                 roce4_frame(mac(2), mac(1), 46, b"z")])
        assert got == [0, 1, 0, 0, 0, 0, 2, 0], got
        q = qos_of(sw, ids[0])[0]
        assert q["dscp2prio"][26] == 6 and q["dscp2prio"][46] == 1 and q["dscp2prio"][27] == 3, q
        text = sw.vsctl("show-qos").stdout
        assert "dscp=26:6,46:1" in text and "trust dscp max-prio=7" in text, text


def test_qos_trust_cap_clamps_and_counts():
    """max-prio=2 on a port trusting PCP: priorities 3..7 become 2 and each
    is counted (prio_capped) in counters, show and show-qos; --port all also
    reaches later ports; bad arguments change nothing; IB mode refuses PCP."""
    with Switch() as sw:
        a, b = sw.port(), sw.port()
        ids = sw.wait_ports(2)
        learn(sw, [a, b])
        r = sw.vsctl("set-qos-trust", "--port", str(ids[0]), "pcp", "max-prio=2", json_out=True)
        assert r == {"port": ids[0], "trust": {"mode": "pcp", "max_prio": 2}}, r
        got = _rx_prio_after(sw, a, b, ids[0],
                             [vlan_frame(mac(2), mac(1), pcp, b"p%d" % pcp) for pcp in range(8)])
        assert got == [1, 1, 6, 0, 0, 0, 0, 0], got
        assert sw.counters(ids[0])["prio_capped"] == 5
        assert sw.counters(ids[1])["prio_capped"] == 0
        assert [c["tx_frames"] for c in qos_of(sw, ids[1])[1]][:3] == [2, 1, 6]
        port = [p for p in sw.vsctl("show-qos", json_out=True)["ports"] if p["id"] == ids[0]][0]
        assert port["prio_capped"] == 5 and port["trust"]["max_prio"] == 2, port
        row = [p for p in sw.show()["ports"] if p["id"] == ids[0]][0]
        assert row["trust"] == {"mode": "pcp", "max_prio": 2}, row
        assert row["counters"]["prio_capped"] == 5, row
        assert "prio_capped 5" in sw.vsctl("show-qos", str(ids[0])).stdout
        assert "prio_capped" in sw.vsctl("counters", str(ids[0])).stdout
        # refused, and nothing changes
        q0 = sw.vsctl("show-qos", json_out=True)
        for bad in (["foo"], ["max-prio=8"], ["max-prio="], ["max-prio=-1"], ["max-prio=2x"],
                    ["pcp", "max-prio=9"], ["--port", "99", "pcp"], ["PCP"]):
            r = sw.vsctl("set-qos-trust", *bad, expect=1)
            assert "bad" in r.stderr or "no port" in r.stderr, (bad, r.stderr)
        assert sw.vsctl("show-qos", json_out=True) == q0, "a refused set-qos-trust changed something"
        assert sw.vsctl("set-qos-trust", expect=2).returncode == 2
        # all: every port now and later; a port's own setting is replaced
        r = sw.vsctl("set-qos-trust", "dscp", "max-prio=4", json_out=True)
        assert r == {"port": "all", "trust": {"mode": "dscp", "max_prio": 4}}, r
        sw.port()
        ids = sw.wait_ports(3)
        q = sw.vsctl("show-qos", json_out=True)
        assert q["trust_all"] == {"mode": "dscp", "max_prio": 4}, q
        assert all(p["trust"] == {"mode": "dscp", "max_prio": 4} for p in q["ports"]), q
        # set-qos reset leaves trust alone
        sw.vsctl("set-qos", "reset")
        assert sw.vsctl("show-qos", json_out=True)["trust_all"]["mode"] == "dscp"
    with Switch("--qos-trust", "pcp", "--qos-max-prio", "3") as sw:
        assert sw.vsctl("show-qos", json_out=True)["trust_all"] == {"mode": "pcp", "max_prio": 3}
    for bad in (["--qos-trust", "all"], ["--qos-max-prio", "8"], ["--link-layer", "ib", "--qos-trust", "pcp"]):
        r = subprocess.run([ARGS.switch, "--socket", "/nonexistent/s", *bad], capture_output=True,
                           text=True, timeout=10)
        assert r.returncode == 2 and "qos" in r.stderr, (bad, r.returncode, r.stderr)
    with Switch("--link-layer", "ib") as sw:
        r = sw.vsctl("set-qos-trust", "pcp", expect=1)
        assert "want sl or none" in r.stderr, r.stderr     # ib_tests: the SL's cap


def _strict_share(trust, n=3000, skip=400, window=1000):
    """Port c floods b with PCP 7 frames, port a with untagged ones, b's
    class 7 strict, b slower than both. Returns a's part of the first
    frames b gets once both wait, c's priority-7 rx frames and its
    prio_capped. The queues (512) outlast what b's socket takes in one
    go, so a strict class that c keeps busy is never empty."""
    with Switch("--queue-frames", "512") as sw:
        a, b, c = sw.port(timeout=30), sw.port(timeout=30), sw.port(timeout=30)
        ids = sw.wait_ports(3)
        learn(sw, [a, b, c])
        sw.vsctl("set-qos", "--port", str(ids[1]), "strict=7")
        if trust:
            sw.vsctl("set-qos-trust", "--port", str(ids[2]), *trust)

        def blast(s, f):
            try:
                for i in range(n):
                    s.send(f(struct.pack("!I", i) + b"s" * 200))
            except OSError:
                pass
        ts = [threading.Thread(target=blast, args=(c, lambda p: vlan_frame(mac(2), mac(3), 7, p)),
                               daemon=True),
              threading.Thread(target=blast, args=(a, lambda p: frame(mac(2), mac(1), p)),
                               daemon=True)]
        for th in ts:
            th.start()
        _wait_for(lambda: sw.counters(ids[0])["bp_paused"] >= 1 and
                  sw.counters(ids[2])["bp_paused"] >= 1, "a and c never both paused", 20)
        got = []
        for i in range(skip + window):
            f = b.recv(65536)
            if i >= skip:      # past what b's socket took before classes mattered
                got.append(f[6:12])
            time.sleep(0.0005)     # slower than the senders: both stay backlogged
        while recv_or_none(b, 0.5) is not None:
            pass
        for th in ts:
            th.join(10)
        c_rx = qos_of(sw, ids[2])[2]
        return got.count(mac(1)) / len(got), c_rx[7]["rx_frames"], sw.counters(ids[2])["prio_capped"]


def test_qos_trust_guest_cannot_starve():
    """A guest port sending PCP 7 at a port whose class 7 is strict takes
    the other port's share only if trusted: with the default (none) or with
    PCP trusted but capped at 3, the untagged sender still gets through."""
    # one FIFO class shares by arrival (uneven, never nothing); two equal
    # weighted classes share evenly
    check_trust_cap(_strict_share, "pcp")


def check_trust_cap(strict_share, mode):
    """The flood at priority 7 into a strict class 7, by strict_share(trust)
    -> (a's share, class 7 frames, prio_capped): a gets through with trust
    none or MODE capped at 3 (counted), and is starved with MODE uncapped.
    Shared by the Ethernet (pcp) and IB (sl) tests."""
    share, hi, capped = strict_share(None)
    assert hi == 0 and capped == 0, (hi, capped)
    assert share >= 0.05, "trust none: a got %.2f of b's port" % share
    share_cap, hi, capped = strict_share([mode, "max-prio=3"])
    assert hi == 0 and capped >= 3000, (hi, capped)
    assert share_cap >= 0.3, "%s capped at 3: a got %.2f of b's port" % (mode, share_cap)
    share_full, hi, _ = strict_share([mode])
    assert hi >= 3000, hi
    print("  a's share of b's port: trust none %.2f, %s max-prio=3 %.2f, %s %.2f"
          % (share, mode, share_cap, mode, share_full))
    assert share_full < 0.02, \
        "trusted %s 7 in a strict class should starve a: %.2f" % (mode, share_full)


def _fill_until(sw, port_id, tc, n, timeout=10):
    _wait_for(lambda: qos_of(sw, port_id)[1][tc]["queue"] >= n,
              "class %d of port %d never had %d frames waiting" % (tc, port_id, n), timeout)


def test_qos_strict_priority_order():
    """b does not read; a's bulk class 0 fills b's queue and a is paused;
    then c's frames of strict class 7 overtake everything that waits."""
    with Switch("--queue-frames", "64", "--qos-trust", "pcp") as sw:
        a, b, c = sw.port(timeout=30), sw.port(timeout=30), sw.port(timeout=30)
        ids = sw.wait_ports(3)
        learn(sw, [a, b, c])
        sw.vsctl("set-qos", "--port", str(ids[1]), "strict=7")
        n_bulk, n_hi = 3000, 20
        t, _ = _blast_until_paused(sw, a, ids[0], mac(2), n_bulk)
        _fill_until(sw, ids[1], 0, 64)
        for i in range(n_hi):
            c.send(vlan_frame(mac(2), mac(3), 7, struct.pack("!I", i) + b"h" * 100))
        _fill_until(sw, ids[1], 7, n_hi)
        order = []
        while len(order) < n_bulk + n_hi:
            f = b.recv(65536)
            if f[12:14] == b"\x81\x00":
                order.append(("hi", struct.unpack("!I", f[18:22])[0]))
            else:
                order.append(("bulk", struct.unpack("!I", f[14:18])[0]))
        t.join(10)
        hi_pos = [i for i, (k, _) in enumerate(order) if k == "hi"]
        assert [s for k, s in order if k == "hi"] == list(range(n_hi)), "class 7 lost or reordered"
        assert [s for k, s in order if k == "bulk"] == list(range(n_bulk)), "bulk lost or reordered"
        assert hi_pos == list(range(hi_pos[0], hi_pos[0] + n_hi)), "class 7 interleaved: %s" % hi_pos
        after = len(order) - 1 - hi_pos[-1]
        # the 64 bulk frames that waited in the switch went after class 7
        assert after >= 64 and hi_pos[0] <= n_bulk - 64, (hi_pos[0], after)
        cb = qos_of(sw, ids[1])[1]
        assert cb[7]["tx_frames"] == n_hi and cb[7]["queue_hiwater"] == n_hi, cb[7]
        assert cb[0]["bp_caused"] >= 1 and cb[0]["queue_hiwater"] == 64, cb[0]


def test_qos_weighted_shares():
    """Two backlogged weighted classes share a slow port by bytes: weights
    3:1 with frames of 1000 and 500 bytes give 1.5 frames of class 1 per
    frame of class 2."""
    with Switch("--queue-frames", "64", "--qos-trust", "pcp") as sw:
        a, b, c = sw.port(timeout=30), sw.port(timeout=30), sw.port(timeout=30)
        ids = sw.wait_ports(3)
        learn(sw, [a, b, c])
        sw.vsctl("set-qos", "--port", str(ids[1]), "weights=1:3,2:1")
        n = 6000
        sizes = {1: 1000, 2: 500}

        def blast(s, src, pcp):
            try:
                for i in range(n):
                    s.send(vlan_frame(mac(2), src, pcp,
                                      struct.pack("!I", i) + b"w" * (sizes[pcp] - 22)))
            except OSError:
                pass
        ts = [threading.Thread(target=blast, args=(a, mac(1), 1), daemon=True),
              threading.Thread(target=blast, args=(c, mac(3), 2), daemon=True)]
        for th in ts:
            th.start()
        _fill_until(sw, ids[1], 1, 64, 20)
        _fill_until(sw, ids[1], 2, 64, 20)
        got = []
        while len(got) < 2 * n:
            got.append(b.recv(65536)[14] >> 5)
            if len(got) % 8 == 0:
                time.sleep(0.0005)   # slower than the senders: both stay backlogged
        for th in ts:
            th.join(10)
        window = got[1000:5000]          # both classes backlogged here
        n1, n2 = window.count(1), window.count(2)
        ratio = (n1 * sizes[1]) / (n2 * sizes[2])
        assert 2.4 <= ratio <= 3.6, "byte share %.2f (frames %d:%d), want 3" % (ratio, n1, n2)
        cls = qos_of(sw, ids[1])[1]
        assert cls[1]["tx_frames"] == n and cls[2]["tx_frames"] == n, cls
        assert cls[1]["tx_bytes"] == n * 1000 and cls[2]["tx_bytes"] == n * 500, cls
        print("  weighted shares: class 1 : class 2 bytes %.2f (frames %d:%d)" % (ratio, n1, n2))


def test_qos_lossy_drops_lossless_pauses():
    """b does not read and only class 3 is lossless: a's class-0 frames
    are dropped once their queue is full (counted, a never paused), c's
    class-3 frames pause c and all arrive in order; the counters add up."""
    with Switch("--queue-frames", "64", "--qos-trust", "dscp") as sw:
        a, b, c = sw.port(timeout=30), sw.port(timeout=30), sw.port(timeout=30)
        ids = sw.wait_ports(3)
        learn(sw, [a, b, c])
        sw.vsctl("set-qos", "--port", str(ids[1]), "lossless=3")
        n_lossy, n_ll = 2000, 3000
        sent = [0]

        def blast_ll():
            try:
                for i in range(n_ll):
                    c.send(ip4_frame(mac(2), mac(3), 26, struct.pack("!I", i) + b"l" * 900))
                    sent[0] = i + 1
            except OSError:
                pass
        t = threading.Thread(target=blast_ll, daemon=True)
        t.start()
        _wait_for(lambda: sw.counters(ids[2])["bp_paused"] >= 1, "lossless sender never paused")
        for i in range(n_lossy):      # never blocks: the switch reads a and drops
            a.send(frame(mac(2), mac(1), struct.pack("!I", i) + b"d" * 900))
        _wait_for(lambda: sw.counters(ids[0])["rx_frames"] >= n_lossy + 1, "a's frames not read")
        ca = sw.counters(ids[0])
        assert ca["bp_paused"] == 0, ca
        cls = qos_of(sw, ids[1])[1]
        assert cls[0]["drop_tc_full"] > 0 and cls[0]["queue_hiwater"] == 64, cls[0]
        assert cls[3]["drop_tc_full"] == 0 and cls[3]["bp_caused"] >= 1, cls[3]
        got = {0: [], 3: []}
        while len(got[3]) < n_ll:
            f = b.recv(65536)
            tc = 3 if f[12:14] == b"\x08\x00" else 0
            got[tc].append(struct.unpack("!I", f[14 + 20 * (tc == 3):18 + 20 * (tc == 3)])[0])
        while recv_or_none(b, 0.3) is not None:
            pass
        t.join(10)
        assert got[3] == list(range(n_ll)), "lossless class lost or reordered frames"
        assert got[0] == sorted(got[0]), "lossy class reordered"
        cb, cls = sw.counters(ids[1]), qos_of(sw, ids[1])[1]
        assert len(got[0]) + cls[0]["drop_tc_full"] == n_lossy, (len(got[0]), cls[0])
        assert cb["drop_tc_full"] == sum(x["drop_tc_full"] for x in cls) == cls[0]["drop_tc_full"]
        assert cb["tx_frames"] == sum(x["tx_frames"] for x in cls), (cb, cls)
        assert cb["tx_bytes"] == sum(x["tx_bytes"] for x in cls), (cb, cls)
        assert cb["bp_caused"] == sum(x["bp_caused"] for x in cls), (cb, cls)
        assert cls[3]["tx_frames"] == n_ll and cls[0]["tx_frames"] == len(got[0]) + 2, cls
        # the drops show in show's total
        row = [p for p in sw.show()["ports"] if p["id"] == ids[1]][0]
        assert row["counters"]["drop_tc_full"] == cls[0]["drop_tc_full"], row
        assert "drop_tc_full" in sw.vsctl("counters", str(ids[1])).stdout


def test_qos_set_and_errors():
    """set-qos: settings read back, --port all also reaches later ports,
    bad arguments are refused and change nothing."""
    with Switch() as sw:
        a = sw.port()
        ids = sw.wait_ports(1)
        q0 = sw.vsctl("show-qos", json_out=True)
        assert q0["qos_all"]["lossless"] == list(range(8)) and q0["qos_all"]["strict"] == []
        assert q0["qos_all"]["dscp2prio"][46] == 5 and q0["qos_all"]["prio2tc"] == list(range(8))
        for bad in (["strict=8"], ["strict=1,,2"], ["strict="], ["weights=0:0"],
                    ["weights=1:1001"], ["weights=1"], ["weights=9:1"], ["lossless=x"],
                    ["map=8:1"], ["map=1:8"], ["dscp=64:1"], ["dscp=1:8"], ["dscp=-1:2"],
                    ["foo=1"], ["strict=7", "lossless=9"], ["--port", "99", "strict=1"],
                    ["--port"], ["dscp=1:2:3"], ["weights=1:2,"]):
            r = sw.vsctl("set-qos", *bad, expect=None)
            assert r.returncode in (1, 2) and r.stderr, (bad, r.returncode, r.stderr)
            if bad != ["--port"]:
                assert r.returncode == 1 and "bad" in r.stderr or "no port" in r.stderr, (bad, r.stderr)
        assert sw.vsctl("show-qos", json_out=True) == q0, "a refused set-qos changed something"
        assert sw.vsctl("set-qos", expect=2).returncode == 2
        r = sw.vsctl("set-qos", "strict=6,7", "weights=0:10,1:30", "lossless=3", "dscp=26:5,10:2",
                     json_out=True)
        assert r["port"] == "all" and r["qos"]["strict"] == [6, 7], r
        b = sw.port()
        ids = sw.wait_ports(2)
        for pid in ids:
            q = qos_of(sw, pid)[0]
            assert q["strict"] == [6, 7] and q["lossless"] == [3], q
            assert q["weights"][:3] == [10, 30, 1] and q["dscp2prio"][10] == 2, q
        text = sw.vsctl("show-qos", str(ids[1])).stdout
        assert "strict=6,7 weights=0:10,1:30,2:1" in text and "lossless=3" in text, text
        assert "dscp=10:2,26:5" in text and "TX_FRAMES" in text, text
        r = sw.vsctl("set-qos", "--port", str(ids[0]), "reset", "strict=all", json_out=True)
        assert r["qos"]["strict"] == list(range(8)) and r["qos"]["lossless"] == list(range(8)), r
        assert qos_of(sw, ids[1])[0]["strict"] == [6, 7], "--port ID changed another port"
        show = sw.show()
        assert show["qos_all"]["strict"] == [6, 7] and "classes" in show["ports"][0], show
        assert sw.vsctl("show-qos", "99", expect=1).stderr
    with Switch("--link-layer", "ib") as sw:       # IB mode has the classes too
        r = sw.vsctl("set-qos", "strict=7", json_out=True)
        assert r["qos"]["strict"] == [7], r


TESTS = [(n[5:], f) for n, f in sorted(globals().items()) if n.startswith("test_")]

# InfiniBand mode (--link-layer ib): test/ib_tests.py, on the same helpers.
import ib_tests  # noqa: E402

ib_tests.Switch, ib_tests.recv_or_none, ib_tests.expect_none = Switch, recv_or_none, expect_none
ib_tests.check_trust_cap = check_trust_cap
TESTS += [(n[5:], f) for n, f in sorted(vars(ib_tests).items()) if n.startswith("test_ib_")]
import ib_state_tests  # noqa: E402  (what a restart keeps: test/ib_state_tests.py)
TESTS += [(n[5:], f) for n, f in sorted(vars(ib_state_tests).items()) if n.startswith("test_ib_")]

# Shared-memory ring ports (--shm-ring): test/shm_tests.py, a fake ring device.
import shm_tests  # noqa: E402

shm_tests.Switch, shm_tests.frame, shm_tests.mac = Switch, frame, mac
shm_tests.recv_or_none, shm_tests.expect_none = recv_or_none, expect_none
TESTS += [(n[5:], f) for n, f in sorted(vars(shm_tests).items()) if n.startswith("test_shm_")]


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--switch", required=True)
    p.add_argument("--vsctl", required=True)
    p.add_argument("--fdb-test", required=True)
    p.add_argument("only", nargs="*")
    ARGS = p.parse_args()
    ARGS.switch = os.path.abspath(ARGS.switch)
    ARGS.vsctl = os.path.abspath(ARGS.vsctl)
    ARGS.fdb_test = os.path.abspath(ARGS.fdb_test)
    ib_tests.ARGS = ARGS
    passed = failed = skipped = 0
    for name, fn in TESTS:
        if ARGS.only and name not in ARGS.only:
            continue
        t0 = time.time()
        try:
            r = fn()
        except Exception:
            failed += 1
            traceback.print_exc()
            print("FAIL %s (%.1fs)" % (name, time.time() - t0), flush=True)
            continue
        if isinstance(r, str) and r.startswith("SKIP"):
            skipped += 1
            print("SKIP %s: %s" % (name, r[5:].strip()), flush=True)
        else:
            passed += 1
            print("PASS %s (%.1fs)" % (name, time.time() - t0), flush=True)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
