"""The ctypes wrapper against independent sources: the RFC 8785 vectors and
JSONTestSuite (../shared/data), and the strict decoder's refusal.

    PYTHONPATH=ffi/python python3 -m unittest discover -s ffi/python/tests
"""

import glob
import os
import unittest

import limen

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
DATA = os.path.join(ROOT, "..", "shared", "data")


def read(path):
    with open(path, "rb") as f:
        return f.read()


@unittest.skipUnless(os.path.isdir(DATA), "../shared/data is absent")
class Corpora(unittest.TestCase):
    def test_rfc_8785_vectors_where_the_forms_agree(self):
        vectors = os.path.join(DATA, "json-canonicalization")
        with limen.Schema(limen.ANY) as s:
            for name in ("arrays.json", "french.json", "structures.json", "unicode.json"):
                got = s.canonical(read(os.path.join(vectors, "input", name)))
                self.assertEqual(got, read(os.path.join(vectors, "output", name)), name)

    def test_every_n_file_of_json_test_suite_is_refused(self):
        files = sorted(glob.glob(os.path.join(DATA, "JSONTestSuite", "test_parsing", "n_*.json")))
        self.assertGreater(len(files), 150)
        with limen.Schema(limen.ANY) as s:
            for path in files:
                with self.assertRaises(limen.Refused, msg=path):
                    s.canonical(read(path))


class Refusals(unittest.TestCase):
    def test_a_refusal_names_its_json_pointer_and_reason(self):
        schema = (
            b'{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",'
            b'"additionalProperties":{"type":"array","items":{"type":"integer"}}}'
        )
        with self.assertRaises(limen.Refused) as e:
            limen.canonical(b'{"hits":[1,2,"x"]}', schema)
        self.assertEqual(e.exception.pointer, "/hits/2")
        self.assertTrue(e.exception.reason.startswith("$.hits[2]: "))
        self.assertTrue(e.exception.reason.endswith(e.exception.why))

    def test_a_schema_limen_does_not_read_is_an_error(self):
        with self.assertRaises(limen.LimenError) as e:
            limen.Schema(b"{}")
        self.assertIn("dialect", e.exception.reason)


if __name__ == "__main__":
    unittest.main()
