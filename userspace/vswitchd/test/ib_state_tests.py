# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
"""Host tests of what an IB switch keeps across a restart (--state-dir):
each VM's IB port number (its QEMU's -name, read by the switch from
/proc/PID/cmdline) and the SM ports designated by name or number. A
"VM" here is a child process whose command line carries -name, as QEMU's
does; it connects and hands its connection back (SO_PEERCRED: its pid).
Helpers and Switch come from ib_tests (run_tests.py injects Switch)."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import ib_tests as T

# the "QEMU": connects, passes the connection back, lives until told
CHILD = ("import socket, sys\n"
         "a = socket.socket(fileno=int(sys.argv[1]))\n"
         "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
         "s.connect(sys.argv[2])\n"
         "socket.send_fds(a, [b'x'], [s.fileno()])\n"
         "a.recv(1)\n")


class VMs:
    """Named peers of a switch; close() ends their processes."""

    def __init__(self):
        self.kids = []

    def connect(self, sw, name):
        a, b = socket.socketpair()
        kid = subprocess.Popen([sys.executable, "-c", CHILD, str(b.fileno()), sw.sock,
                                "-name", "%s,debug-threads=on" % name], pass_fds=[b.fileno()])
        b.close()
        self.kids.append((kid, a))
        _, fds, _, _ = socket.recv_fds(a, 1, 1)
        s = socket.socket(fileno=fds[0])
        s.settimeout(5)
        sw.ports.append(s)
        return s

    def close(self):
        for kid, a in self.kids:
            a.close()
            kid.wait(timeout=10)
        self.kids = []


def _ib_port_of(sw, name):
    """The IB port VM @name is on (its port's peer reads "... vm NAME ib N")."""
    deadline = time.time() + 5
    while True:
        for p in sw.show()["ports"]:
            w = p.get("peer", "").split()
            if "vm" in w and w[w.index("vm") + 1] == name and "ib" in w:
                return int(w[w.index("ib") + 1])
        assert time.time() < deadline, sw.show()
        time.sleep(0.02)


def _ib_port_of_last(sw):
    deadline = time.time() + 5
    while True:
        last = sw.show()["ports"][-1]
        w = last.get("peer", "").split()
        if "ib" in w:
            return int(w[w.index("ib") + 1])
        assert time.time() < deadline, sw.show()
        time.sleep(0.02)


def test_ib_port_numbers_and_sm_survive_restart():
    """A restarted switch gives each VM the IB port number it had, in
    whatever order they reconnect; a newcomer gets the lowest number no
    absent VM had. SM ports designated by VM name (and by number) hold
    across the restart: only the named VM's port may send SubnSet."""
    state = tempfile.mkdtemp(prefix="cnuas-vs-state-")
    vms = VMs()
    try:
        with T._ib_switch("--state-dir", state) as sw:
            for name in ("vmA", "vmB", "vmC"):
                vms.connect(sw, name)
                _ib_port_of(sw, name)
            assert [_ib_port_of(sw, n) for n in ("vmA", "vmB", "vmC")] == [1, 2, 3]
            sw.vsctl("sm-port", "add", "name=vmC")
            sw.vsctl("sm-port", "add", "5")
            for bad in ("name=", "name=a b", "name=" + "x" * 65):
                sw.vsctl("sm-port", "add", bad, expect=1)
            vms.close()
        with open(os.path.join(state, "ib-state")) as f:
            kept = f.read()
        assert kept == ("cnuas-ib-state 1\nport 1 vmA\nport 2 vmB\nport 3 vmC\n"
                        "sm 5\nsm name=vmC\n"), kept
        with T._ib_switch("--state-dir", state) as sw:
            c = vms.connect(sw, "vmC")
            assert _ib_port_of(sw, "vmC") == 3
            b = vms.connect(sw, "vmB")
            assert _ib_port_of(sw, "vmB") == 2
            sw.port()                                      # no -name: a newcomer
            assert _ib_port_of_last(sw) == 4               # 1 is kept for vmA
            a = vms.connect(sw, "vmA")
            assert _ib_port_of(sw, "vmA") == 1
            lst = sw.vsctl("sm-port", "list", json_out=True)
            ids = {p["port"]: p["vsport"] for p in T._ib(sw)["ports"]}
            assert lst == {"enforced": True, "sm_ports": [
                {"port": 3, "vsport": ids[3], "from": "name"},
                {"port": 5, "vsport": 0, "from": "vsctl"}],
                "sm_names": [{"vm": "vmC", "from": "vsctl"}]}, lst
            sm = T.SM(c)
            assert T.node_info(sm.get(0x11)[1])["type"] == 2
            for guest in (a, b):
                g = T.SM(guest)
                g.set(0x15, 0, data=bytes(T.pi_set(lid=1, smlid=9, mkey=0x66, prot=3)),
                      expect=False)
                T.expect_none(guest, "a guest's SubnSet answered")
            p0 = T.port_info(sm.get(0x15, 0)[1])
            assert (p0["smlid"], p0["mkey"]) != (9, 0x66), p0
            assert [sw.counters(ids[n])["ib_drop_smp_not_sm"] for n in (1, 2)] == [1, 1]
            # the SM VM goes and comes back: its port is an SM port again
            sw.ports.remove(c)
            c.close()
            vms.kids[0][1].close()
            T._wait_ib(sw, 3)
            assert [p["port"] for p in sw.vsctl("sm-port", "list", json_out=True)["sm_ports"]] == [5]
            vms.connect(sw, "vmC")
            assert _ib_port_of(sw, "vmC") == 3
            assert [p["port"] for p in sw.vsctl("sm-port", "list", json_out=True)["sm_ports"]] == [3, 5]
            sw.vsctl("sm-port", "del", "name=vmC")
            sw.vsctl("sm-port", "del", "5")
            assert "nobody may manage" in sw.vsctl("sm-port", "list").stdout
            vms.close()
        with open(os.path.join(state, "ib-state")) as f:
            kept = f.read()
        assert kept == ("cnuas-ib-state 1\nport 1 vmA\nport 2 vmB\nport 3 vmC\n"), kept
    finally:
        vms.close()
        shutil.rmtree(state, ignore_errors=True)


def test_ib_sm_port_by_name_option_and_full_switch():
    """--sm-port name=VM: that VM's port, whatever its number, manages.
    When every port is taken or kept, a newcomer gets the lowest port kept
    for an absent VM, which then belongs to the newcomer's VM."""
    state = tempfile.mkdtemp(prefix="cnuas-vs-state-")
    with open(os.path.join(state, "ib-state"), "w") as f:
        f.write("cnuas-ib-state 1\nport 1 gone1\nport 2 gone2\nport 3 sm\n")
    vms = VMs()
    try:
        with T.Switch("--link-layer", "ib", "--ib-ports", "4", "--state-dir", state,
                      "--sm-port", "name=sm") as sw:
            s = vms.connect(sw, "sm")
            assert _ib_port_of(sw, "sm") == 3
            assert T.node_info(T.SM(s).get(0x11)[1])["type"] == 2
            vms.connect(sw, "new1")
            assert _ib_port_of(sw, "new1") == 4
            vms.connect(sw, "new2")
            assert _ib_port_of(sw, "new2") == 1                # gone1's, the lowest kept
            assert "kept for VM gone1, goes to VM new2" in sw.logtext()
            lst = sw.vsctl("sm-port", "list", json_out=True)
            assert lst["sm_names"] == [{"vm": "sm", "from": "option"}], lst
            vms.close()
        with open(os.path.join(state, "ib-state")) as f:
            kept = f.read()
        assert kept == "cnuas-ib-state 1\nport 1 new2\nport 2 gone2\nport 3 sm\nport 4 new1\n", kept
    finally:
        vms.close()
        shutil.rmtree(state, ignore_errors=True)
    for args in (["--link-layer", "ib", "--sm-port", "name="],
                 ["--link-layer", "ib", "--sm-port", "name=a b"], ["--sm-port", "name=x"]):
        r = subprocess.run([T.ARGS.switch, "--socket", "/nonexistent/s", "--foreground", *args],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and "--sm-port" in r.stderr, (args, r.returncode, r.stderr)


HEADER = b"cnuas-ib-state 1\n"
HOSTILE = [
    (b"", "empty"),
    (b"garbage\n", "line 1: not 'cnuas-ib-state 1'"),
    (b"cnuas-ib-state 2\nport 1 a\n", "line 1:"),
    (HEADER + b"port 0 a\n", "line 2: no IB port number"),
    (HEADER + b"port 255 a\n", "line 2: no IB port number"),
    (HEADER + b"port 01 a\n", "line 2: no IB port number"),
    (HEADER + b"port -1 a\n", "line 2: no IB port number"),
    (HEADER + b"port 3 a b\n", "line 2: not a VM name"),
    (HEADER + b"port 3 " + b"x" * 65 + b"\n", "line 2: not a VM name"),
    (HEADER + b"port 3 \xff\n", "line 2: not a VM name"),
    (HEADER + b"port 3 a\nport 4 a\n", "line 3: the VM has another port"),
    (HEADER + b"port 3 a\nport 2 a\n", "line 3: the VM has another port"),
    (HEADER + b"port 3 a\nport 3 b\n", "line 3: the port is named twice"),
    (HEADER + b"sm 1\nsm 1\n", "line 3: the SM port is there twice"),
    (HEADER + b"sm name=x\nsm name=x\n", "line 3: the SM name is there twice"),
    (HEADER + b"sm 300\n", "line 2: no IB port number"),
    (HEADER + b"port 3 a", "line 2: no newline"),
    (HEADER + b"port 3 a\0\n", "NUL byte"),
    (HEADER + b"\n", "line 2: neither"),
    (HEADER + b"sm name=ok\n" * 1 + b"x" * 70000 + b"\n", "larger than"),
]


def test_ib_state_file_hostile():
    """A state file that is not what the switch writes stops the start
    with its line and reason, and stays as it was."""
    state = tempfile.mkdtemp(prefix="cnuas-vs-state-")
    path = os.path.join(state, "ib-state")
    try:
        for content, why in HOSTILE:
            with open(path, "wb") as f:
                f.write(content)
            r = subprocess.run([T.ARGS.switch, "--socket", os.path.join(state, "s"),
                                "--ctl", os.path.join(state, "c"), "--foreground",
                                "--link-layer", "ib", "--state-dir", state],
                               capture_output=True, text=True, timeout=10)
            assert r.returncode == 1 and path in r.stderr and why in r.stderr, \
                (content[:40], why, r.returncode, r.stderr)
            with open(path, "rb") as f:
                assert f.read() == content, "the refused state file was changed"
        os.unlink(path)
        os.symlink("/etc/passwd", path)                  # no following a link
        r = subprocess.run([T.ARGS.switch, "--socket", os.path.join(state, "s"),
                            "--ctl", os.path.join(state, "c"), "--foreground",
                            "--link-layer", "ib", "--state-dir", state],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 1 and path in r.stderr, r.stderr
        gone = os.path.join(state, "gone")                # a directory that is not there
        r = subprocess.run([T.ARGS.switch, "--socket", os.path.join(state, "s"),
                            "--ctl", os.path.join(state, "c"), "--foreground",
                            "--link-layer", "ib", "--state-dir", gone],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 1 and gone in r.stderr, r.stderr
    finally:
        shutil.rmtree(state, ignore_errors=True)
