#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
"""Host side of the Cnuas lab control channels (stdlib only).

  labctl.py exec [--sync-timeout S] NODEDIR -- CMD [ARGS...]
      run CMD in the guest through its agent (virtio-serial port sockets
      NODEDIR/agentK.sock; a free one is picked with flock), forward
      stdin/stdout/stderr, exit with CMD's status (255 = lab failure)
  labctl.py qmp [--timeout S] SOCKET CMD-JSON
      qmp_capabilities, then one command; print the reply, exit 1 on error
  labctl.py migrate [--timeout S] [--blk NBD-SOCKET] [--src-pid PID]
                    [--dst-pid PID] [--switch VSCTL CTL] [--hold S] SRC-QMP DST-QMP URI
      migrate the guest of SRC-QMP into the QEMU of DST-QMP (started with
      -incoming defer -S): migrate-incoming URI there, migrate URI here,
      wait for the end. Then the source's switch port goes (handover: on
      an IB switch its IB port waits Active for the destination's, the
      connection of --dst-pid's process only; the source's peer is
      process PID), the destination runs (`cont`), and PID is
      ended (SIGKILL, not waited for; without --src-pid: `quit`). Prints
      query-migrate's last answer as JSON, with "lab-resume": ms from the
      end until the mirror ended, the port was gone, cont, the source was
      killed.
      --hold S: wait S seconds between the hand-over and `cont`, as a slow
      destination would (tests reconnect another guest in that window)
      --blk: first mirror the writable top layer of the drive "root" into
      the destination's over an NBD export there

The agent protocol is described in tests/lab/agent/proto.h.
"""
import errno
import fcntl
import glob
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time

SYNC_MAGIC = b"\xffCNUASyn"
ACK_MAGIC = b"\xffCNUASak"
ARGV, STDIN, STDIN_EOF, STDOUT, STDERR, ENV, EXIT = 1, 2, 3, 4, 5, 6, 7
MAX_PAYLOAD = 65536
LAB_FAIL = 255


def die(msg, code=LAB_FAIL):
    sys.stderr.write("lab: %s\n" % msg)
    sys.exit(code)


def frame(ftype, payload=b""):
    return struct.pack("<HHI", ftype, 0, len(payload)) + payload


def lock_free_port(nodedir, wait_s, avoid=()):
    """Return (sock, lockfd, path) of a free agent port of the node."""
    socks = sorted(glob.glob(os.path.join(nodedir, "agent*.sock")),
                   key=lambda p: int(p.rsplit("agent", 1)[1].split(".")[0]))
    if not socks:
        die("no agent sockets in %s (is the lab up?)" % nodedir)
    deadline = time.monotonic() + wait_s
    while True:
        for path in socks:
            if path in avoid and len(avoid) < len(socks):
                continue
            fd = os.open(path[:-5] + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
            except OSError as e:
                os.close(fd)
                die("cannot connect to %s: %s (is the guest running?)" % (path, e.strerror))
            return s, fd, path
        if time.monotonic() > deadline:
            die("all agent ports of %s busy for %d s" % (nodedir, wait_s))
        time.sleep(0.05)


def sync(s, timeout):
    """Send SYNC+nonce, discard everything before ACK+nonce; return leftover
    bytes, or None when the agent did not answer in time."""
    nonce = os.urandom(8)
    s.sendall(SYNC_MAGIC + nonce)
    want = ACK_MAGIC + nonce
    buf = b""
    deadline = time.monotonic() + timeout
    while True:
        i = buf.find(want)
        if i >= 0:
            return buf[i + len(want):]
        buf = buf[-(len(want) - 1):]
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        r, _, _ = select.select([s], [], [], left)
        if r:
            data = s.recv(65536)
            if not data:
                die("agent connection closed during sync")
            buf += data


def write_out(fd, data, broken):
    if fd in broken:
        return
    try:
        while data:
            n = os.write(fd, data)
            data = data[n:]
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        broken.add(fd)


def cmd_exec(args):
    sync_timeout = 15.0
    while args and args[0].startswith("--") and args[0] != "--":
        if args[0] == "--sync-timeout":
            sync_timeout = float(args[1])
            args = args[2:]
        else:
            die("exec: unknown option %s" % args[0], 2)
    if len(args) < 3 or args[1] != "--":
        die("usage: labctl.py exec NODEDIR -- CMD [ARGS...]", 2)
    nodedir, argv = args[0], args[2:]
    # A port whose agent is busy (e.g. reaping a command stuck in the
    # kernel) does not answer: try the next free one.
    deadline = time.monotonic() + sync_timeout
    tried = []
    while True:
        s, lock, path = lock_free_port(nodedir, 120, tried)
        left = deadline - time.monotonic()
        inbuf = sync(s, max(0.5, min(5.0, left)))
        if inbuf is not None:
            break
        s.close()
        os.close(lock)
        tried.append(path)
        if time.monotonic() >= deadline:
            die("agent did not answer within %g s" % sync_timeout)
    s.setblocking(False)
    out = bytearray(frame(ARGV, b"".join(a.encode("utf-8", "surrogateescape") + b"\0" for a in argv)))

    stdin_open = True
    try:
        os.fstat(0)
    except OSError:
        stdin_open = False
    if not stdin_open:
        out += frame(STDIN_EOF)
    broken = set()
    poller = select.poll()
    sfd = s.fileno()
    while True:
        # Socket: always read (output must never stall), write when queued.
        poller.register(sfd, select.POLLIN | (select.POLLOUT if out else 0))
        want_stdin = stdin_open and len(out) < (1 << 20)
        if want_stdin:
            poller.register(0, select.POLLIN)
        elif stdin_open:
            try:
                poller.unregister(0)
            except KeyError:
                pass
        for fd, ev in poller.poll():
            if fd == 0:
                try:
                    data = os.read(0, MAX_PAYLOAD)
                except OSError:
                    data = b""
                if data:
                    out += frame(STDIN, data)
                else:
                    out += frame(STDIN_EOF)
                    stdin_open = False
                    poller.unregister(0)
            elif fd == sfd:
                if ev & select.POLLOUT and out:
                    try:
                        n = s.send(out)
                        del out[:n]
                    except BlockingIOError:
                        pass
                    except OSError as e:
                        die("agent connection lost: %s" % e.strerror)
                if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                    try:
                        data = s.recv(1 << 18)
                    except BlockingIOError:
                        data = None
                    except OSError as e:
                        die("agent connection lost: %s" % e.strerror)
                    if data == b"":
                        die("agent connection closed (guest gone?)")
                    if data:
                        inbuf += data
                    while len(inbuf) >= 8:
                        ftype, zero, ln = struct.unpack_from("<HHI", inbuf)
                        if zero or ln > MAX_PAYLOAD or ftype not in (STDOUT, STDERR, EXIT):
                            die("protocol error from agent (type %d len %d)" % (ftype, ln))
                        if len(inbuf) < 8 + ln:
                            break
                        payload, inbuf = inbuf[8:8 + ln], inbuf[8 + ln:]
                        if ftype == STDOUT:
                            write_out(1, payload, broken)
                        elif ftype == STDERR:
                            write_out(2, payload, broken)
                        else:
                            status = struct.unpack("<I", payload[:4])[0]
                            s.close()
                            sys.exit(status & 0xff)


def qmp_read(f, deadline):
    while True:
        if time.monotonic() > deadline:
            die("QMP timeout")
        line = f.readline()
        if not line:
            die("QMP connection closed")
        msg = json.loads(line)
        if "event" not in msg:
            return msg


def cmd_qmp(args):
    timeout = 30.0
    if args and args[0] == "--timeout":
        timeout = float(args[1])
        args = args[2:]
    if len(args) != 2:
        die("usage: labctl.py qmp SOCKET CMD-JSON", 2)
    path, cmd = args
    try:
        req = json.loads(cmd)
    except ValueError as e:
        die("bad command JSON: %s" % e, 2)
    lockfd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(lockfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.monotonic() > deadline:
                die("QMP socket %s busy" % path)
            time.sleep(0.05)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
    except OSError as e:
        die("cannot connect to %s: %s" % (path, e.strerror))
    f = s.makefile("rwb")
    qmp_read(f, deadline)  # greeting
    f.write(b'{"execute": "qmp_capabilities"}\n')
    f.flush()
    r = qmp_read(f, deadline)
    if "error" in r:
        die("qmp_capabilities failed: %s" % json.dumps(r))
    f.write(json.dumps(req).encode() + b"\n")
    f.flush()
    r = qmp_read(f, deadline)
    print(json.dumps(r))
    sys.exit(1 if "error" in r else 0)


class Qmp:
    """One QMP connection, capabilities negotiated."""

    def __init__(self, path, deadline):
        self.deadline = deadline
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(max(1.0, deadline - time.monotonic()))
        try:
            self.s.connect(path)
        except OSError as e:
            die("cannot connect to %s: %s" % (path, e.strerror))
        self.f = self.s.makefile("rwb")
        qmp_read(self.f, deadline)  # greeting
        self.cmd("qmp_capabilities")

    def cmd(self, name, **args):
        req = {"execute": name}
        if args:
            req["arguments"] = args
        self.f.write(json.dumps(req).encode() + b"\n")
        self.f.flush()
        r = qmp_read(self.f, self.deadline)
        if "error" in r:
            die("%s failed: %s" % (name, json.dumps(r["error"])))
        return r["return"]


def cmd_migrate(args):
    timeout, nbd, src_pid, dst_pid, vsctl, ctl = 600.0, None, 0, 0, None, None
    hold = 0.0
    while args and args[0].startswith("--"):
        if args[0] == "--timeout":
            timeout = float(args[1])
            args = args[2:]
        elif args[0] == "--src-pid":
            src_pid = int(args[1])
            args = args[2:]
        elif args[0] == "--dst-pid":
            dst_pid = int(args[1])
            args = args[2:]
        elif args[0] == "--switch":
            vsctl, ctl = args[1], args[2]
            args = args[3:]
        elif args[0] == "--hold":
            hold = float(args[1])
            args = args[2:]
        elif args[0] == "--blk":
            nbd = args[1]
            args = args[2:]
        else:
            break
    if len(args) != 3:
        die("usage: labctl.py migrate [--timeout S] [--blk NBD-SOCKET] [--src-pid PID] [--dst-pid PID] [--switch VSCTL CTL] [--hold S] SRC-QMP DST-QMP URI", 2)
    deadline = time.monotonic() + timeout
    src, dst = Qmp(args[0], deadline), Qmp(args[1], deadline)
    if dst.cmd("query-status")["status"] != "inmigrate":
        die("the destination QEMU does not wait for a migration")
    if nbd:
        # The disk is taken over (activated) only at `cont`, once the NBD
        # export that writes into it is gone: both cannot hold write access.
        dst.cmd("migrate-set-capabilities",
                capabilities=[{"capability": "late-block-activate", "state": True}])
    dst.cmd("migrate-incoming", uri=args[2])
    # A unix socket on one host: no need for QEMU's 128 MiB/s default cap.
    src.cmd("migrate-set-parameters", **{"max-bandwidth": 4 << 30})
    if nbd:
        # The disk is a -snapshot overlay over a shared image: mirror only
        # what the guest wrote (sync=top; the destination has the same
        # base), every new write to both sides until the switch-over.
        dst.cmd("nbd-server-start", addr={"type": "unix", "data": {"path": nbd}})
        dst.cmd("nbd-server-add", device="root", writable=True)
        src.cmd("drive-mirror", device="root", sync="top",
                mode="existing", format="raw", target="nbd+unix:///root?socket=" + nbd,
                **{"job-id": "mig-root", "copy-mode": "write-blocking"})
        while True:
            jobs = [j for j in src.cmd("query-block-jobs") if j["device"] == "mig-root"]
            if not jobs:
                die("the disk mirror ended early")
            if jobs[0].get("ready"):
                break
            if time.monotonic() > deadline:
                die("the disk mirror is not ready after %g s" % timeout)
            time.sleep(0.05)
    src.cmd("migrate", uri=args[2])
    while True:
        st = src.cmd("query-migrate")
        if st.get("status") in ("completed", "failed", "cancelled"):
            break
        if time.monotonic() > deadline:
            src.cmd("migrate_cancel")
            die("migration not done after %g s: %s" % (timeout, json.dumps(st)))
        time.sleep(0.02)
    t_end = time.monotonic()
    if st["status"] != "completed":
        if nbd:
            src.cmd("block-job-cancel", device="mig-root", force=True)
        print(json.dumps(st), flush=True)
        sys.exit(1)
    if nbd:
        # The source is stopped and every write was mirrored as it was
        # made: the copy is in sync; end the job there.
        src.cmd("block-job-cancel", device="mig-root")
        while [j for j in src.cmd("query-block-jobs") if j["device"] == "mig-root"]:
            if time.monotonic() > deadline:
                die("the disk mirror does not end")
            time.sleep(0.01)
    timing = {"mirror": int((time.monotonic() - t_end) * 1000)}

    def src_port():
        r = subprocess.run([vsctl, "--ctl", ctl, "--json", "show"], capture_output=True, text=True)
        try:
            ports = json.loads(r.stdout)["ports"]
        except (ValueError, KeyError):
            die("cannot read the switch's ports: %s" % r.stderr.strip())
        for p in ports:
            # "pid N", or "pid N ib PORT" on an IB switch
            if p.get("peer", "").split()[:2] == ["pid", str(src_pid)]:
                return p["id"]
        return None

    if vsctl and src_pid:
        # The source is stopped for good: its switch port goes now, so the
        # guest's MAC is free for the new port (the process itself takes a
        # second or more to go). A switch without del-port: wait for it.
        port = src_port()
        if port is not None:
            # handover: on an IB switch the port stays Active for the new
            # QEMU, which connects when it runs (elsewhere: del-port), and
            # for its connection only (pid=).
            cmd = [vsctl, "--ctl", ctl, "handover", str(port)]
            if dst_pid:
                cmd += ["10000", "pid=%d" % dst_pid]
            subprocess.run(cmd, capture_output=True)
        while src_port() is not None:
            if time.monotonic() > deadline:
                die("the switch keeps the port of pid %d" % src_pid)
            if port is not None and time.monotonic() - t_end > 2:
                port = None
                os.kill(src_pid, signal.SIGKILL)
            time.sleep(0.01)
        timing["port"] = int((time.monotonic() - t_end) * 1000)
    time.sleep(hold)
    if nbd:
        dst.cmd("nbd-server-stop")
    dst.cmd("cont")
    timing["cont"] = int((time.monotonic() - t_end) * 1000)
    if src_pid:
        # Stopped and with nothing left to write (its disk overlay is an
        # unlinked temporary file): end it at once; a `quit` takes QEMU
        # about a second of clean-up here. Not waited for: the kernel
        # takes another second or more to free its memory, and nothing
        # of it is left that the guest uses (its switch port is gone,
        # its sockets' paths become the new process's).
        try:
            os.kill(src_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        timing["quit"] = int((time.monotonic() - t_end) * 1000)
    else:
        src.cmd("quit")
    st["lab-resume"] = timing
    print(json.dumps(st), flush=True)
    sys.exit(0)


def main():
    signal.signal(signal.SIGINT, lambda *a: sys.exit(130))
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    if len(sys.argv) < 2:
        die("usage: labctl.py exec|qmp|migrate ...", 2)
    if sys.argv[1] == "exec":
        cmd_exec(sys.argv[2:])
    elif sys.argv[1] == "qmp":
        cmd_qmp(sys.argv[2:])
    elif sys.argv[1] == "migrate":
        cmd_migrate(sys.argv[2:])
    else:
        die("unknown command %s" % sys.argv[1], 2)


if __name__ == "__main__":
    main()
