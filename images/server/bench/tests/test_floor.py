"""floor.c, the benchmark's limit reference: built, started on a free port with a 100-byte file and a set of 1,000
8 KiB files, and its answers checked byte for byte, once per way of sending the 8 KiB bodies (writev from memory,
sendfile from a memfd) and once for floor_uring.c, the same answers on io_uring. Also how the harness starts it and which floors the profile runs."""
import os
import socket
import subprocess
import multiprocessing
import tempfile
import time
import unittest

from hsbench import content, profile, servers
from hsbench.cgroup import CpuQuota
from hsbench.workloads import WORKLOADS

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100\r\n\r\n"
HEAD8K = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 8192\r\n\r\n"


def _get(path: str, extra: bytes = b"") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n".encode() + extra + b"\r\n"


def _read(sock, n):
    """Up to n bytes, or fewer if the peer closes or goes quiet for 3 s."""
    data = b""
    sock.settimeout(3)
    while len(data) < n:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    return data


def _closing_client(args) -> list:
    """250 connections one after another, each asking for the 100-byte file with Connection: close and closing as
    soon as the answer is complete; returns the starts of the answers that were not the expected one."""
    port, answer = args
    expect = answer.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1)
    bad = []
    for _ in range(250):
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(_get(content.SMALL_PATH, b"Connection: close\r\n"))
            try:
                got = _read(s, len(expect))
            except OSError as e:  # a reset
                got = repr(e).encode()
        if got != expect:
            bad.append(got[:80])
    return bad


class _FloorAnswers:
    """The tests, run by one subclass per body mechanism (BODY_IO)."""

    BODY_IO = ""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = cls.tmp.name
        cls.body = bytes(range(100))
        with open(os.path.join(root, "100.html"), "wb") as f:
            f.write(cls.body)
        os.makedirs(os.path.join(root, "8k"))
        cls.files = {}
        for i in range(content.SET_COUNT):
            cls.files[i] = os.urandom(content.SET_SIZE)
            with open(os.path.join(root, content.set_path(i).lstrip("/")), "wb") as f:
                f.write(cls.files[i])
        cls.floor = servers.Floor(body_file=os.path.join(root, "100.html"), set_dir=os.path.join(root, "8k"),
                                  body_io=cls.BODY_IO, root=root, port=servers.free_port(), cpu=0,
                                  quota=CpuQuota("hs-bench-unused", 40), workdir=os.path.join(root, "floor"))
        cls.port = cls.floor.port
        cls.proc = subprocess.Popen(cls.floor.argv())  # the harness's argv, without its pin and cgroup
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", cls.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or cls.proc.poll() is not None:
                    raise
                time.sleep(0.05)

    @classmethod
    def tearDownClass(cls):
        cls.proc.kill()
        cls.proc.wait()
        cls.tmp.cleanup()

    def _answer(self, i):
        return HEAD8K + self.files[i] if i is not None else HEAD + self.body

    def test_the_harness_check_passes_for_every_file(self):
        # what the harness runs before timing (Server.validate), here over the whole set, not just its samples
        files = {content.SMALL_PATH: self.body, **{content.set_path(i): b for i, b in self.files.items()}}
        self.floor.validate(files)

    def test_pipelined_mix_answered_in_order(self):
        # 300 requests in one write: more than one writev's worth (256 answers), over a megabyte of answers, so
        # the socket buffer fills and the floor has to wait for the client to read
        wanted = [(i * 7) % content.SET_COUNT if i % 2 else None for i in range(300)]
        req = b"".join(_get(content.set_path(i) if i is not None else content.SMALL_PATH) for i in wanted)
        expect = b"".join(self._answer(i) for i in wanted)
        with socket.create_connection(("127.0.0.1", self.port)) as s:
            s.sendall(req)
            self.assertEqual(_read(s, len(expect)), expect)

    def test_a_target_cut_by_the_end_of_a_read_is_still_found(self):
        with socket.create_connection(("127.0.0.1", self.port)) as s:
            for cut in (b"GET /8k/05", b"G", b"GET /8k/0500.bin HTTP/1.1\r\nHost: x\r\n\r"):
                req = _get(content.set_path(500))
                s.sendall(req[:len(cut)])
                time.sleep(0.05)  # lets the floor read the first part alone (if it does not, the test is weaker)
                s.sendall(req[len(cut):])
                self.assertEqual(_read(s, len(self._answer(500))), self._answer(500), cut)

    def test_any_other_target_gets_the_small_answer(self):
        with socket.create_connection(("127.0.0.1", self.port)) as s:
            for path in ("/8k/1000.bin", "/8k/05x0.bin", "/other", "/8k/"):
                s.sendall(_get(path))
                self.assertEqual(_read(s, len(self._answer(None))), self._answer(None), path)

    def test_connection_close_is_answered_then_closed(self):
        for path, body in ((content.set_path(999), self.files[999]), (content.SMALL_PATH, self.body)):
            with socket.create_connection(("127.0.0.1", self.port)) as s:
                s.sendall(_get(path, b"Connection: close\r\n"))
                data = _read(s, 100_000)  # stops at the floor's FIN
            self.assertTrue(data.startswith(b"HTTP/1.1 200 OK\r\n"), path)
            self.assertIn(b"Connection: close\r\n", data)
            self.assertTrue(data.endswith(b"\r\n\r\n" + body), path)


    def test_closing_connections_in_parallel_each_get_their_whole_answer(self):
        # wrk's Connection: close pattern: many clients at once, each closing as soon as its answer is complete, so
        # the floor's fds are closed and reused by new accepts all the time. The io_uring floor once shut the next
        # connection down with a shutdown still queued for the previous owner of its fd (see floor_uring.c). Client
        # processes, not threads, so that the load is high enough to reuse fds within the floor's loop turn.
        with multiprocessing.Pool(16) as pool:
            bad = [b for got in pool.map(_closing_client, [(self.port, self._answer(None))] * 16) for b in got]
        self.assertEqual(bad, [], f"{len(bad)} of 4,000 connections got something else")

class FloorWritev(_FloorAnswers, unittest.TestCase):
    BODY_IO = "writev"


class FloorUring(_FloorAnswers, unittest.TestCase):
    BODY_IO = "uring"


class FloorSendfile(_FloorAnswers, unittest.TestCase):
    BODY_IO = "sendfile"


class FloorInTheHarness(unittest.TestCase):
    def _floor(self, d, **kw):
        return servers.Floor(body_file="/s/100.html", root="/s", port=1, cpu=0, quota=CpuQuota("hs-bench-unused", 40),
                             workdir=os.path.join(d, "floor"), **kw)

    def test_argv_per_mechanism(self):
        with tempfile.TemporaryDirectory() as d:
            sf = self._floor(d, set_dir="/s/8k", body_io="sendfile")
            wv = self._floor(d, set_dir="/s/8k", body_io="writev")
            self.assertEqual(sf.argv()[1:], ["--sendfile", "1", "/s/100.html", "/s/8k"])
            self.assertEqual(wv.argv()[1:], ["1", "/s/100.html", "/s/8k"])
            self.assertIn("sendfile", sf.version())
            ur = self._floor(d, set_dir="/s/8k", body_io="uring")
            self.assertEqual(os.path.basename(ur.binary), "floor_uring")
            self.assertEqual(ur.argv()[1:], ["1", "/s/100.html", "/s/8k"])
            self.assertIn("io_uring", ur.version())

    def test_unknown_mechanism_is_refused(self):
        with tempfile.TemporaryDirectory() as d, self.assertRaises(SystemExit):
            self._floor(d, body_io="mmap")

    def test_profile_runs_both_epoll_floors_only_where_bodies_differ_and_io_uring_everywhere(self):
        with tempfile.TemporaryDirectory() as d:
            every = profile.floor_variants([self._floor(d, set_dir="/s/8k", body_io="sendfile")], 40, d, "t")
        self.assertEqual([(f.name, f.body_io) for f in every], [("floor-sendfile", "sendfile"),
                                                                 ("floor-writev", "writev"), ("floor-uring", "uring")])
        small, big = WORKLOADS[0], next(w for w in WORKLOADS if w.key == "8k-set")
        self.assertEqual([profile.runs_here(f, big, "sendfile") for f in every], [True, True, True])
        self.assertEqual([profile.runs_here(f, small, "sendfile") for f in every], [True, False, True])


if __name__ == "__main__":
    unittest.main()
