"""Tests of the loader's description path that need no GPU, no driver and no
runtime: a compiled library's `__fusion_signature_<function>` strings read
from the file, a signature given by hand checked against them, and the errors
for a missing file, a missing function and a missing description, which must
not turn into "libcuda.so.1: cannot open" where no driver is installed.

The stand-in library is built here with the C compiler (skipped without one).
It depends on a stand-in for the driver library that is deleted after the
link, as on a machine without a driver.

    python3 -m unittest discover -s runtime/test/python
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import fusion_runtime as fr  # noqa: E402

CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

SOURCE = r"""
#include <stdint.h>
#define EXPORT __attribute__((visibility("default")))
EXPORT const char __fusion_signature_norm[] =
    "arg0: bf16[?,1024]; arg1: bf16[1024]; result0: bf16[?,1024]";
EXPORT const char __fusion_signature_gemm[] =
    "arg0: bf16[512,256]; arg1: bf16[256,256]; result0: bf16[512,256]";
/* A user function whose name looks like a description: not norm's. */
EXPORT const char norm_signature[] = "x: f32[1]";
EXPORT void norm(void *a, void *b, int64_t o, int64_t s0, int64_t s1, int64_t t0, int64_t t1) {}
EXPORT void gemm(void) {}
EXPORT void undescribed(void) {}
"""

# The driver stand-in's name holds "libcuda", as the real one's does.
DRIVER = "libcuda_fusion_test_stand_in.so.1"


@unittest.skipUnless(CC, "no C compiler")
class DescriptionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="fusion-descriptions-")
        source = os.path.join(cls.dir, "fake.c")
        with open(source, "w") as f:
            f.write(SOURCE)
        empty = os.path.join(cls.dir, "empty.c")
        with open(empty, "w") as f:
            f.write("void fusion_test_driver_stand_in(void) {}\n")
        driver = os.path.join(cls.dir, DRIVER)
        subprocess.run([CC, "-shared", "-fPIC", empty, "-o", driver,
                        f"-Wl,-soname,{DRIVER}"], check=True)
        # The library needs the driver stand-in, found next to it ($ORIGIN),
        # like a compiled library needs the runtime and the runtime libcuda.
        cls.library = os.path.join(cls.dir, "libfake.so")
        subprocess.run([CC, "-shared", "-fPIC", source, "-o", cls.library, "-Wl,--no-as-needed",
                        driver, "-Wl,-rpath,$ORIGIN"], check=True)
        cls.working = os.path.join(cls.dir, "with-driver.so")
        subprocess.run([CC, "-shared", "-fPIC", source, "-o", cls.working], check=True)
        os.remove(driver)  # now as on a machine without the driver

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def load(self, path=None, runtime=None):
        with mock.patch.dict(os.environ):
            os.environ.pop(fr.RUNTIME_LIBRARY_ENV, None)
            return fr.Library(path or self.library, runtime=runtime)

    def test_descriptions_are_read_from_the_file(self):
        library = self.load()
        self.assertEqual(library.signature("norm"),
                         "arg0: bf16[?,1024]; arg1: bf16[1024]; result0: bf16[?,1024]")
        self.assertIsNone(library.signature("undescribed"))
        # norm_signature is a user symbol: no function 'norm_signature', no description of norm_.
        self.assertIsNone(library.signature("norm_"))
        functions = library.functions()
        self.assertEqual(functions["gemm"],
                         "arg0: bf16[512,256]; arg1: bf16[256,256]; result0: bf16[512,256]")
        self.assertIsNone(functions["undescribed"])
        self.assertNotIn("norm_signature", functions)
        self.assertNotIn("__fusion_signature_norm", functions)

    def test_missing_file(self):
        with self.assertRaises(FileNotFoundError) as caught:
            fr.Library(os.path.join(self.dir, "libnone.so"))
        self.assertIn("no such library", str(caught.exception))
        self.assertNotIn("libcuda", str(caught.exception))
        # A bare name found nowhere, even where the runtime itself cannot be
        # loaded for want of the driver (here the stand-in library plays it).
        for runtime in (None, self.library):
            with self.assertRaises(FileNotFoundError) as caught:
                self.load("libfusion_test_none.so", runtime=runtime)
            self.assertIn("no such library: libfusion_test_none.so (neither in the working "
                          "directory", str(caught.exception))

    def test_relative_path_is_taken_from_the_working_directory(self):
        here = os.getcwd()
        os.chdir(self.dir)
        try:
            library = self.load("libfake.so")
        finally:
            os.chdir(here)
        self.assertEqual(library.path, self.library)
        self.assertIn("norm", library.functions())

    def test_missing_function_names_what_exists_without_a_driver(self):
        library = self.load()
        with self.assertRaises(AttributeError) as caught:
            library.function("nope")
        message = str(caught.exception)
        self.assertIn("exports no function 'nope'; its functions: 'gemm', 'norm', 'undescribed'",
                      message)
        self.assertNotIn("libcuda", message)
        for name in ("norm_signature", "__fusion_signature_norm"):
            with self.assertRaisesRegex(AttributeError, f"exports no function '{name}'"):
                library.function(name)

    def test_missing_description_without_a_driver(self):
        library = self.load()
        with self.assertRaisesRegex(ValueError, "has no description of 'undescribed' \\(no "
                                                "'__fusion_signature_undescribed'"):
            library.function("undescribed")

    def test_what_needs_the_driver_says_so(self):
        library = self.load()
        with self.assertRaises(OSError) as caught:
            library.function("norm")
        self.assertIn("cannot load the CUDA driver library libcuda.so.1", str(caught.exception))
        self.assertIn(DRIVER, str(caught.exception))

    def test_a_given_signature_is_checked_against_the_description(self):
        library = self.load()
        with self.assertRaises(fr.ArgumentError) as caught:
            library.function("gemm", "a: bf16[M,K]; b: bf16[K,N]")
        self.assertIn("gemm: the signature given, 'a: bf16[M,K]; b: bf16[K,N]', does not match "
                      "the library's description, 'arg0: bf16[512,256]; arg1: bf16[256,256]; "
                      "result0: bf16[512,256]': expected 3 arguments, but got 2",
                      str(caught.exception))
        with self.assertRaisesRegex(fr.ArgumentError, "argument 1 \\('b'\\): expected size 256 in "
                                                      "dimension 0, but got 128"):
            library.function("gemm", "a: bf16[M,K]; b: bf16[128,N]; c: bf16[M,N]")
        with self.assertRaisesRegex(fr.ArgumentError, "argument 0 \\('arg0'\\): expected rank 2, "
                                                      "but got 1"):
            library.function("norm", "bf16[?]; bf16[1024]; bf16[?,1024]")

    def test_loads_where_its_dependencies_are_found(self):
        # No runtime linked and none given: the error says how to give one.
        with self.assertRaisesRegex(FileNotFoundError, "does not link the fusion runtime"):
            self.load(self.working)


class MergeSignaturesTest(unittest.TestCase):
    def merge(self, described, given):
        return fr.merge_signatures("f", fr.parse_signature(described), fr.parse_signature(given))

    def test_names_and_sizes_of_the_given_signature_over_dynamic_sizes(self):
        specs, static = self.merge("arg0: bf16[?,1024]; result0: f32[?]", "x: bf16[M,?]; y: f32[M]")
        self.assertEqual([str(s) for s in specs], ["x: bf16[M,1024]", "y: f32[M]"])
        self.assertEqual(static, [])

    def test_a_name_over_a_static_size_is_still_checked(self):
        specs, static = self.merge("arg0: bf16[512,1024]", "x: bf16[M,K]")
        self.assertEqual(str(specs[0]), "x: bf16[M,K]")
        self.assertEqual(static, [(0, 0, 512), (0, 1, 1024)])

    def test_unnamed_arguments_take_the_descriptions_names(self):
        specs, _ = self.merge("arg0: f16[4]", "f16[?]")
        self.assertEqual(str(specs[0]), "arg0: f16[4]")

    def test_the_descriptions_tied_sizes_stay_tied(self):
        # The compiler names the dynamic sizes its function ties (s0): a
        # given `?` keeps the name, so the loader still checks they agree.
        described = "arg0: bf16[s0,1024]; arg1: bf16[1024]; result0: bf16[s0,1024]"
        specs, static = self.merge(described, "x: bf16[?,1024]; w: bf16[1024]; y: bf16[?,?]")
        self.assertEqual([str(s) for s in specs],
                         ["x: bf16[s0,1024]", "w: bf16[1024]", "y: bf16[s0,1024]"])
        self.assertEqual(static, [])
        # The given signature's name takes over, wherever the tie is.
        specs, _ = self.merge(described, "x: bf16[M,1024]; w: bf16[1024]; y: bf16[?,1024]")
        self.assertEqual([str(s) for s in specs],
                         ["x: bf16[M,1024]", "w: bf16[1024]", "y: bf16[M,1024]"])
        # A given name used for another size does not capture the tie.
        specs, _ = self.merge(described, "x: bf16[?,1024]; w: bf16[s0]; y: bf16[?,1024]")
        self.assertEqual([str(s) for s in specs],
                         ["x: bf16[s0_,1024]", "w: bf16[s0]", "y: bf16[s0_,1024]"])
        # A given size over a tied one is checked beside the tie.
        specs, static = self.merge(described, "x: bf16[8,1024]; w: bf16[1024]; y: bf16[?,1024]")
        self.assertEqual([str(s) for s in specs],
                         ["x: bf16[s0,1024]", "w: bf16[1024]", "y: bf16[s0,1024]"])
        self.assertEqual(static, [(0, 0, 8)])

    def test_two_names_for_one_tied_size_are_refused(self):
        with self.assertRaisesRegex(
                fr.ArgumentError,
                "argument 2 \\('y'\\): dimension 0 is the description's size s0, which the "
                "signature given names M elsewhere: expected M, but got N"):
            self.merge("arg0: bf16[s0,1024]; arg1: bf16[1024]; result0: bf16[s0,1024]",
                       "x: bf16[M,1024]; w: bf16[1024]; y: bf16[N,1024]")

    def test_check_shapes_binds_the_tied_sizes(self):
        # A CPU library's call (host tensors): the size checks alone.
        specs = fr.parse_signature("arg0: bf16[s0,4]; arg1: f32[s0]; result0: bf16[s0,4]")
        self.assertEqual(fr.check_shapes(specs, [(3, 4), (3,), (3, 4)], "f"), {"s0": 3})
        with self.assertRaisesRegex(
                fr.ArgumentError, "f: argument 2 \\('result0'\\): expected size s0 = 3 in "
                                  "dimension 0 \\(bound by argument 0 \\('arg0'\\) dimension 0\\), "
                                  "but got 2"):
            fr.check_shapes(specs, [(3, 4), (3,), (2, 4)], "f")
        with self.assertRaisesRegex(fr.ArgumentError, "f: argument 0 \\('arg0'\\): expected size 4 "
                                                      "in dimension 1, but got 5"):
            fr.check_shapes(specs, [(3, 5), (3,), (3, 4)], "f")
        with self.assertRaisesRegex(TypeError, "f: expected 3 tensor arguments"):
            fr.check_shapes(specs, [(3, 4)], "f")

    def test_mismatches(self):
        with self.assertRaisesRegex(fr.ArgumentError, "expected dtype bf16, but got f16"):
            self.merge("arg0: bf16[4]", "f16[4]")
        with self.assertRaisesRegex(fr.ArgumentError, "expected size 4 in dimension 0, but got 8"):
            self.merge("arg0: bf16[4]", "bf16[8]")


if __name__ == "__main__":
    unittest.main()
