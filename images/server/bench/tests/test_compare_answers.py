"""Unit tests of compare-answers.py's own logic (make bench-test): what the mask hides (only the Date value), the
raw requests it writes, the exchange lists' coverage, the curl error text's port mask. The comparison itself runs
real binaries: `make server-compare-answers OLD=... NEW=...`."""
import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("compare_answers", os.path.join(HERE, "..", "compare-answers.py"))
ca = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ca)


class Mask(unittest.TestCase):
    def test_only_the_date_value_is_masked(self):
        a = (b"HTTP/1.1 200 OK\r\nDate: Wed, 02 Dec 2026 05:33:08 GMT\r\nLast-Modified: Fri, 02 Jan 2026 03:04:05 GMT"
             b"\r\nX-Date: 1\r\n\r\nbody date: x")
        b = a.replace(b"05:33:08", b"05:33:09")
        self.assertEqual(ca.mask(a), ca.mask(b))
        self.assertIn(b"Date: <masked>\r\n", ca.mask(a))
        self.assertIn(b"Last-Modified: Fri, 02 Jan 2026 03:04:05 GMT", ca.mask(a))
        self.assertIn(b"X-Date: 1", ca.mask(a))

    def test_a_changed_header_is_still_a_difference(self):
        a = b"HTTP/2 200 \r\ndate: Wed, 02 Dec 2026 05:33:08 GMT\r\netag: \"a\"\r\n\r\n"
        self.assertNotEqual(ca.mask(a), ca.mask(a.replace(b'"a"', b'"b"')))
        self.assertEqual(ca.mask(a), ca.mask(a.replace(b"05:33:08", b"06:00:00")))

    def test_first_diff(self):
        self.assertEqual(ca.first_diff(b"abcd", b"abXd"), 2)
        self.assertEqual(ca.first_diff(b"ab", b"abc"), 2)


class Exchanges(unittest.TestCase):
    def test_raw_requests_are_exact(self):
        self.assertEqual(ca.req("GET", "/x", ["A: 1"]), b"GET /x HTTP/1.1\r\nHost: example.test\r\nA: 1\r\n\r\n")
        self.assertEqual(ca.req("GET", "/", version="HTTP/1.0", host=False), b"GET / HTTP/1.0\r\n\r\n")

    def test_every_kind_is_asked(self):
        names = " | ".join(n for n, _ in ca.h1_exchanges({"/about": '"e"'}))
        for kind in ["HEAD ", "If-None-Match", "If-Match", "If-Range", "Range: bytes=0-9", "Accept-Encoding: br",
                     "OPTIONS", "preflight", "Origin", "POST", "oversized header", "pipelined", "HTTP/2.0 in h1",
                     "/old", "/blog/", "/u/42", "/spa/", "/docs", "/missing"]:
            self.assertIn(kind, names)
        h2 = " | ".join(n for n, _ in ca.h2_exchanges({"/about": '"e"'}))
        for kind in ["h2 HEAD", "INM", "Range", "preflight", "h2 POST", "big header", "ae br"]:
            self.assertIn(kind, h2)

    def test_names_are_unique(self):
        names = [n for n, _ in ca.h1_exchanges({"/about": '"e"'})] + [n for n, _ in ca.h2_exchanges({"/about": '"e"'})]
        self.assertEqual(len(names), len(set(names)))


if __name__ == "__main__":
    unittest.main()
