"""Tests of the Python loader that run without a GPU.

Argument checks run on stand-in tensors (no torch needed), and on real CPU
tensors where torch is installed: every check up to the device check, which a
CPU tensor fails before anything is called. The calling convention is tested
against libfusion_runtime_abi_echo.so, a stand-in for a compiled library that
records what it receives; those tests need the paths CTest passes in the
environment (FUSION_RUNTIME_LIBRARY, FUSION_ABI_ECHO_LIBRARY,
FUSION_TEST_CUDA_STUB) and are skipped without them.

The tests that need torch skip, saying so, where it cannot be imported; with
FUSION_TEST_REQUIRE_TORCH=1 (CI: scripts/test.sh, with the virtual
environment scripts/install-deps.sh installs torch into) they fail instead.

    python3 -m unittest discover -s runtime/test/python
"""

import ctypes
import os
import subprocess
import sys
import unittest
from unittest import mock

# The loader, runtime/python/fusion_runtime.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import fusion_runtime as fr  # noqa: E402

try:
    import torch
except Exception as _error:  # not installed, or broken (a library it loads is missing)
    torch = None
    TORCH_ERROR = f"{type(_error).__name__}: {_error}"
else:
    TORCH_ERROR = None

REQUIRE_TORCH = os.environ.get("FUSION_TEST_REQUIRE_TORCH") == "1"


def needs_torch():
    """Skips the calling test where torch cannot be imported; fails it where
    this run requires torch."""
    if torch is not None:
        return
    if REQUIRE_TORCH:
        raise AssertionError(
            f"FUSION_TEST_REQUIRE_TORCH=1, but {sys.executable} cannot import torch: "
            f"{TORCH_ERROR} (scripts/install-deps.sh installs it into .venv)")
    raise unittest.SkipTest(f"torch cannot be imported ({TORCH_ERROR}); scripts/install-deps.sh "
                            f"installs it into .venv, which scripts/test.sh then uses")


class FakeDevice:
    def __init__(self, kind="cuda", index=0):
        self.type = kind
        self.index = index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"

    def __eq__(self, other):
        return isinstance(other, FakeDtype) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


class FakeTensor:
    """Quacks like a torch.Tensor as far as the loader looks."""

    def __init__(self, shape, dtype="bfloat16", strides=None, pointer=0x7F0000000000,
                 device=None, storage_offset=0):
        self.shape = tuple(shape)
        self.dtype = FakeDtype(dtype)
        self._strides = tuple(strides) if strides is not None else fr._row_major_strides(shape)
        self._pointer = pointer
        self.device = device or FakeDevice()
        self._storage_offset = storage_offset

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._pointer

    def storage_offset(self):
        return self._storage_offset

    # What the loader's fast path asks of a tensor it has checked before.
    def is_contiguous(self):
        expected = fr._row_major_strides(self.shape)
        return 0 in self.shape or all(size <= 1 or got == want for size, got, want
                                      in zip(self.shape, self._strides, expected))

    def get_device(self):
        return (self.device.index or 0) if self.device.type == "cuda" else -1


MATMUL = fr.parse_signature("a: bf16[M,K]; b: bf16[K,N]; c: f32[M,N]")


def matmul_args(m=128, k=64, n=32):
    return [FakeTensor((m, k)), FakeTensor((k, n), pointer=0x7F0000100000),
            FakeTensor((m, n), "float32", pointer=0x7F0000200000)]


class SignatureTest(unittest.TestCase):
    def test_parses_names_dtypes_and_sizes(self):
        specs = fr.parse_signature("a: bf16[M,K]; f32[4, ?]; s: i64[]")
        self.assertEqual([s.name for s in specs], ["a", None, "s"])
        self.assertEqual(specs[0].shape, ("M", "K"))
        self.assertEqual(specs[1].shape, (4, None))
        self.assertEqual(specs[2].rank, 0)
        self.assertEqual(str(specs[1]), "f32[4,?]")

    def test_rejects_unknown_dtype(self):
        with self.assertRaisesRegex(ValueError, r"signature entry 1: expected a dtype in bf16, "
                                                r".*but got 'f8'"):
            fr.parse_signature("bf16[1]; f8[2]")

    def test_rejects_bad_syntax_and_sizes(self):
        with self.assertRaisesRegex(ValueError, r"expected 'name: dtype\[d0,d1,...\]', but got "
                                                r"'bf16\(4\)'"):
            fr.parse_signature("bf16(4)")
        with self.assertRaisesRegex(ValueError, "expected a size, a size name or '\\?', but got "
                                                "'-3'"):
            fr.parse_signature("bf16[-3]")


class CheckArgumentsTest(unittest.TestCase):
    def check(self, tensors, specs=MATMUL):
        return fr.check_arguments(specs, tensors, "gemm")

    def test_accepts_matching_tensors_and_binds_sizes(self):
        self.assertEqual(self.check(matmul_args()), {"M": 128, "K": 64, "N": 32})

    def test_argument_count(self):
        with self.assertRaisesRegex(TypeError, r"gemm: expected 3 tensor arguments \(a: "
                                               r"bf16\[M,K\]; .*\), but got 2"):
            self.check(matmul_args()[:2])

    def test_not_a_tensor(self):
        args = matmul_args()
        args[1] = 42
        with self.assertRaisesRegex(TypeError, r"gemm: argument 1 \('b'\): expected a "
                                               r"torch.Tensor, but got int"):
            self.check(args)

    def test_dtype(self):
        args = matmul_args()
        args[2] = FakeTensor((128, 32), "bfloat16")
        with self.assertRaisesRegex(fr.ArgumentError, r"argument 2 \('c'\): expected dtype "
                                                      r"torch.float32 \(f32\), but got "
                                                      r"torch.bfloat16"):
            self.check(args)

    def test_rank(self):
        args = matmul_args()
        args[0] = FakeTensor((2, 128, 64))
        with self.assertRaisesRegex(fr.ArgumentError, r"argument 0 \('a'\): expected rank 2 "
                                                      r"\(shape a: bf16\[M,K\]\), but got rank 3 "
                                                      r"\(shape \[2, 128, 64\]\)"):
            self.check(args)

    def test_size_names_must_agree(self):
        args = matmul_args()
        args[1] = FakeTensor((48, 32), pointer=0x7F0000100000)
        with self.assertRaisesRegex(fr.ArgumentError, r"argument 1 \('b'\): expected size K = 64 "
                                                      r"in dimension 0 \(bound by argument 0 "
                                                      r"\('a'\) dimension 1\), but got 48"):
            self.check(args)

    def test_static_sizes(self):
        specs = fr.parse_signature("x: f32[8192, 512]")
        with self.assertRaisesRegex(fr.ArgumentError, "expected size 512 in dimension 1, but "
                                                      "got 256"):
            self.check([FakeTensor((8192, 256), "float32")], specs)

    def test_contiguity(self):
        args = matmul_args()
        args[0] = FakeTensor((128, 64), strides=(1, 128))  # a transposed view
        with self.assertRaisesRegex(fr.ArgumentError, r"argument 0 \('a'\): expected row-major "
                                                      r"contiguous strides \(64, 1\), but got "
                                                      r"\(1, 128\); pass .contiguous\(\)"):
            self.check(args)

    def test_size_one_dimensions_may_have_any_stride(self):
        specs = fr.parse_signature("x: f32[1, 64]")
        self.check([FakeTensor((1, 64), "float32", strides=(999, 1))], specs)

    def test_tensors_without_elements_may_have_any_strides(self):
        # As torch's x[:, ::2] of a 0 x 64 tensor: contiguous for torch, and
        # .contiguous() returns it unchanged, so refusing it could not be fixed.
        specs = fr.parse_signature("x: f32[M, N]")
        self.assertEqual(self.check([FakeTensor((0, 32), "float32", strides=(64, 2))], specs),
                         {"M": 0, "N": 32})
        with self.assertRaisesRegex(fr.ArgumentError, "expected row-major contiguous strides"):
            self.check([FakeTensor((1, 32), "float32", strides=(64, 2))], specs)

    def test_device(self):
        args = matmul_args()
        args[0] = FakeTensor((128, 64), device=FakeDevice("cpu", None))
        with self.assertRaisesRegex(fr.ArgumentError, r"argument 0 \('a'\): expected a CUDA "
                                                      r"tensor, but got a tensor on cpu"):
            self.check(args)
        args = matmul_args()
        args[2] = FakeTensor((128, 32), "float32", device=FakeDevice("cuda", 1))
        with self.assertRaisesRegex(fr.ArgumentError, r"argument 2 \('c'\): expected device "
                                                      r"cuda:0 \(the device of argument 0\), but "
                                                      r"got cuda:1"):
            self.check(args)

    def test_alignment(self):
        args = matmul_args()
        args[1] = FakeTensor((64, 32), pointer=0x7F0000100008, storage_offset=4)
        with self.assertRaisesRegex(fr.ArgumentError, r"argument 1 \('b'\): expected a data "
                                                      r"pointer aligned to 16 bytes, but got "
                                                      r"0x7f0000100008 \(storage offset 4 "
                                                      r"elements\); pass .clone\(\)"):
            self.check(args)

    def test_memref_words(self):
        tensor = FakeTensor((4, 8, 16), pointer=0x1000)
        self.assertEqual(fr.memref_words(tensor),
                         [0x1000, 0x1000, 0, 4, 8, 16, 128, 16, 1])


CPU_DEVICE = "expected a CUDA tensor, but got a tensor on cpu"


class TorchCpuTensorTest(unittest.TestCase):
    """Real torch tensors on the CPU: every check up to the device check.

    A CPU tensor that passes its dtype, shape and layout checks fails the
    device check, so that error shows that those checks passed."""

    def setUp(self):
        needs_torch()

    def check(self, specs, tensors):
        if isinstance(specs, str):
            specs = fr.parse_signature(specs)
        return fr.check_arguments(specs, tensors, "f")

    def test_the_dtype_table_matches_torch(self):
        # Both ways a tensor is recognized: by duck typing before the loader
        # has imported torch, by isinstance after.
        for module in (None, torch):
            with mock.patch.object(fr, "_torch_module", module):
                for short, (name, size) in fr.DTYPES.items():
                    dtype = getattr(torch, name[len("torch."):])
                    self.assertEqual(str(dtype), name)
                    self.assertEqual(torch.empty(0, dtype=dtype).element_size(), size, short)
                    with self.assertRaisesRegex(fr.ArgumentError, CPU_DEVICE):
                        self.check(f"x: {short}[4]", [torch.zeros(4, dtype=dtype)])
                    other = torch.float64 if dtype != torch.float64 else torch.float32
                    with self.assertRaisesRegex(fr.ArgumentError,
                                                f"expected dtype {name} \\({short}\\), but "
                                                f"got {other}"):
                        self.check(f"x: {short}[4]", [torch.zeros(4, dtype=other)])
                with self.assertRaisesRegex(TypeError, "argument 0 \\('x'\\): expected a "
                                                       "torch.Tensor, but got list"):
                    self.check("x: f32[4]", [[0.0] * 4])

    def test_rank_and_sizes_of_real_tensors(self):
        x = torch.zeros(2, 3, 4)
        with self.assertRaisesRegex(fr.ArgumentError, r"argument 0 \('x'\): expected rank 2 "
                                                      r"\(shape x: f32\[M,K\]\), but got rank 3 "
                                                      r"\(shape \[2, 3, 4\]\)"):
            self.check("x: f32[M,K]", [x])
        with self.assertRaisesRegex(fr.ArgumentError, "expected size 5 in dimension 2, but got 4"):
            self.check("x: f32[2,3,5]", [x])
        with self.assertRaisesRegex(fr.ArgumentError, CPU_DEVICE):
            self.check("x: f32[2,?,K]", [x])
        with self.assertRaisesRegex(fr.ArgumentError, CPU_DEVICE):
            self.check("s: f32[]", [torch.tensor(1.0)])

    def test_layouts_torch_calls_contiguous_pass_and_others_do_not(self):
        base = torch.zeros(8, 64)
        contiguous = {
            "rows of a tensor": base[2:6],
            "one row": base[3:4],
            "a size-1 dimension with any stride": torch.zeros(64, 1).t(),
            "a new axis": base[:, None, :],
            "no elements, sliced": torch.zeros(0, 64)[:, ::2],
            "no elements, transposed": torch.zeros(64, 0).t(),
        }
        for what, view in contiguous.items():
            self.assertTrue(view.is_contiguous(), what)
            with self.assertRaisesRegex(fr.ArgumentError, CPU_DEVICE, msg=what):
                self.check(f"x: f32[{','.join('?' * view.dim())}]", [view])
        strided = {
            "transposed": (base.t(), "\\(8, 1\\), but got \\(1, 64\\)"),
            "every other column": (base[:, ::2], "\\(32, 1\\), but got \\(64, 2\\)"),
            "columns": (base[:, 8:40], "\\(32, 1\\), but got \\(64, 1\\)"),
            "broadcast": (base[:1].expand(4, 64), "\\(64, 1\\), but got \\(0, 1\\)"),
        }
        for what, (view, strides) in strided.items():
            self.assertFalse(view.is_contiguous(), what)
            with self.assertRaisesRegex(fr.ArgumentError, "argument 0 \\('x'\\): expected "
                                        f"row-major contiguous strides {strides}; pass "
                                        "\\.contiguous\\(\\)", msg=what):
                self.check("x: f32[?,?]", [view])
            # What the message asks for is enough.
            with self.assertRaisesRegex(fr.ArgumentError, CPU_DEVICE, msg=what):
                self.check("x: f32[?,?]", [view.contiguous()])

    def test_later_arguments_and_bound_sizes(self):
        # Argument 0 a stand-in on a CUDA device, so that the real tensors
        # after it are checked: each whole, up to its device.
        a = FakeTensor((128, 64))
        b = torch.zeros(64, 32, dtype=torch.bfloat16)
        c = torch.zeros(128, 32, dtype=torch.float32)
        with self.assertRaisesRegex(fr.ArgumentError, r"argument 1 \('b'\): expected size K = 64 "
                                                      r"in dimension 0 \(bound by argument 0 "
                                                      r"\('a'\) dimension 1\), but got 48"):
            fr.check_arguments(MATMUL, [a, torch.zeros(48, 32, dtype=torch.bfloat16), c], "gemm")
        with self.assertRaisesRegex(fr.ArgumentError, r"argument 1 \('b'\): expected row-major "
                                                      r"contiguous strides \(32, 1\)"):
            fr.check_arguments(MATMUL, [a, b.t().contiguous().t(), c], "gemm")
        with self.assertRaisesRegex(fr.ArgumentError, r"argument 1 \('b'\): " + CPU_DEVICE):
            fr.check_arguments(MATMUL, [a, b, c.to(torch.float16)], "gemm")

    def test_memref_words_of_real_tensors(self):
        x = torch.zeros(4, 8, 16)
        pointer = x.data_ptr()
        self.assertEqual(fr.memref_words(x), [pointer, pointer, 0, 4, 8, 16, 128, 16, 1])
        # A view passes its own data pointer, offset 0.
        view = x[1:3]
        self.assertEqual(fr.memref_words(view),
                         [pointer + 128 * 4, pointer + 128 * 4, 0, 2, 8, 16, 128, 16, 1])

    def test_dtype_shape_and_strides_of_real_tensors(self):
        a = torch.zeros(128, 64, dtype=torch.bfloat16)
        b = torch.zeros(64, 32, dtype=torch.bfloat16)
        c = torch.zeros(128, 32, dtype=torch.float32)
        # Each argument is checked whole before the next: the bad one is the
        # first (a CPU tensor fails its device check after its own checks).
        with self.assertRaisesRegex(fr.ArgumentError, "argument 0 .*expected dtype "
                                                      "torch.bfloat16"):
            fr.check_arguments(MATMUL, [a.to(torch.float16), b, c], "gemm")
        with self.assertRaisesRegex(fr.ArgumentError, "argument 0 .*expected row-major "
                                                      "contiguous strides"):
            fr.check_arguments(MATMUL, [a.t().contiguous().t(), b, c], "gemm")
        with self.assertRaisesRegex(fr.ArgumentError, "expected a CUDA tensor, but got a tensor "
                                                      "on cpu"):
            fr.check_arguments(MATMUL, [a, b, c], "gemm")


class ImportTest(unittest.TestCase):
    def test_import_does_not_need_torch(self):
        code = ("import sys; sys.modules['torch'] = None; import fusion_runtime; "
                "assert fusion_runtime._torch() is None; print('ok')")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(fr.__file__)))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=False)
        self.assertEqual(out.stdout.strip(), "ok", out.stderr)


RUNTIME = os.environ.get("FUSION_RUNTIME_LIBRARY")
ECHO = os.environ.get("FUSION_ABI_ECHO_LIBRARY")
STUB = os.environ.get("FUSION_TEST_CUDA_STUB")


@unittest.skipUnless(RUNTIME and ECHO, "FUSION_RUNTIME_LIBRARY and FUSION_ABI_ECHO_LIBRARY "
                                       "are not set (run through CTest)")
class CallingConventionTest(unittest.TestCase):
    """The loader against a stand-in compiled library; no driver call is made."""

    @classmethod
    def setUpClass(cls):
        if STUB:
            # The runtime needs libcuda.so.1; here that is the toolkit's stub.
            ctypes.CDLL(STUB, mode=ctypes.RTLD_GLOBAL)
        cls.library = fr.Library(ECHO, runtime=RUNTIME)

    def words(self):
        count = ctypes.c_int64.in_dll(self.library.cdll, "echo_count").value
        array = (ctypes.c_int64 * 64).in_dll(self.library.cdll, "echo_words")
        return list(array[:count])

    def test_signature_metadata(self):
        self.assertEqual(self.library.signature("echo_matmul"),
                         "a: bf16[M,K]; b: bf16[K,N]; c: f32[M,N]")
        # echo_fail_signature is a user symbol, not echo_fail's description.
        self.assertIsNone(self.library.signature("echo_fail"))
        with self.assertRaisesRegex(ValueError, "has no description of 'echo_fail' \\(no "
                                                "'__fusion_signature_echo_fail'"):
            self.library.function("echo_fail")
        self.assertEqual(self.library.functions()["echo_matmul"],
                         "a: bf16[M,K]; b: bf16[K,N]; c: f32[M,N]")
        self.assertIsNone(self.library.functions()["echo_fail"])

    def test_given_signature_is_checked_against_the_description(self):
        with self.assertRaises(fr.ArgumentError) as caught:
            self.library.function("echo_matmul", "x: bf16[M,K]")
        self.assertIn("the signature given, 'x: bf16[M,K]', does not match the library's "
                      "description, 'a: bf16[M,K]; b: bf16[K,N]; c: f32[M,N]': expected 3 "
                      "arguments, but got 1", str(caught.exception))
        with self.assertRaisesRegex(fr.ArgumentError, "argument 2 \\('c'\\): expected dtype f32, "
                                                      "but got bf16"):
            self.library.function("echo_matmul", "a: bf16[M,K]; b: bf16[K,N]; c: bf16[M,N]")
        matmul = self.library.function("echo_matmul", "a: bf16[M,K]; b: bf16[K,N]; c: f32[M,N]")
        self.assertEqual(matmul(*matmul_args(m=256, k=64, n=32)), {"M": 256, "K": 64, "N": 32})

    def test_passes_expanded_memref_descriptors(self):
        matmul = self.library.function("echo_matmul")
        a, b, c = matmul_args(m=256, k=64, n=32)
        self.assertEqual(matmul(a, b, c), {"M": 256, "K": 64, "N": 32})
        self.assertEqual(self.words(), [
            0x7F0000000000, 0x7F0000000000, 0, 256, 64, 64, 1,
            0x7F0000100000, 0x7F0000100000, 0, 64, 32, 32, 1,
            0x7F0000200000, 0x7F0000200000, 0, 256, 32, 32, 1,
        ])

    def test_repeated_calls_pass_each_calls_pointers_and_sizes(self):
        matmul = self.library.function("echo_matmul")
        matmul(*matmul_args(m=256, k=64, n=32))
        a, b, c = (FakeTensor((256, 64), pointer=0x7F0000300000),
                   FakeTensor((64, 32), pointer=0x7F0000400000),
                   FakeTensor((256, 32), "float32", pointer=0x7F0000500000))
        for _ in range(2):
            self.assertEqual(matmul(a, b, c), {"M": 256, "K": 64, "N": 32})
            self.assertEqual(self.words(), [
                0x7F0000300000, 0x7F0000300000, 0, 256, 64, 64, 1,
                0x7F0000400000, 0x7F0000400000, 0, 64, 32, 32, 1,
                0x7F0000500000, 0x7F0000500000, 0, 256, 32, 32, 1,
            ])
        self.assertEqual(len(matmul._plans), 1)
        # Other sizes: a plan of their own.
        matmul(*matmul_args(m=512, k=64, n=32))
        self.assertEqual(self.words()[3:5], [512, 64])
        self.assertEqual(len(matmul._plans), 2)

    def test_repeated_calls_are_still_checked(self):
        matmul = self.library.function("echo_matmul")
        a, b, c = matmul_args()
        matmul(a, b, c)
        with self.assertRaisesRegex(fr.ArgumentError, "expected row-major contiguous strides"):
            matmul(FakeTensor((128, 64), strides=(1, 128)), b, c)
        with self.assertRaisesRegex(fr.ArgumentError, "expected a data pointer aligned to 16"):
            matmul(a, FakeTensor((64, 32), pointer=0x7F0000100008), c)
        with self.assertRaisesRegex(fr.ArgumentError, "expected a CUDA tensor"):
            matmul(a, b, FakeTensor((128, 32), "float32", device=FakeDevice("cpu", None)))
        with self.assertRaisesRegex(fr.ArgumentError, "expected dtype torch.float32"):
            matmul(a, b, FakeTensor((128, 32), "float16"))
        with self.assertRaisesRegex(TypeError, "expected 3 tensor arguments"):
            matmul(a, b)
        with self.assertRaisesRegex(fr.ArgumentError, "expected size K = 64"):
            matmul(a, FakeTensor((48, 32)), c)

    def test_a_failure_pending_before_the_call_is_raised_as_such(self):
        matmul = self.library.function("echo_matmul")
        a, b, c = matmul_args()
        matmul(a, b, c)
        # Leave a failure pending, as a direct call of an entry point can.
        encode = self.library.runtime.cdll.mgpuTensorMapEncodeTiledMemref
        encode.restype = ctypes.c_void_p
        box = (ctypes.c_int64 * 1)(64)
        descriptor = (ctypes.c_int64 * 5)(0, 0, 0, 64, 1)
        encode(ctypes.c_int64(7), descriptor, ctypes.c_int64(9), ctypes.c_int64(0),
               ctypes.c_int64(0), ctypes.c_int64(0), ctypes.c_int64(0), box)
        self.assertEqual(self.library.runtime.peek_status(), 1)
        with self.assertRaisesRegex(fr.FusionRuntimeError,
                                    r"before calling echo_matmul: mgpuTensorMapEncodeTiledMemref: "
                                    r"expected rank in 1..5, but got 7"):
            matmul(a, b, c)
        self.assertEqual(self.library.runtime.peek_status(), 0)
        matmul(a, b, c)

    def test_without_fusionrt_invoke_the_call_takes_the_long_way(self):
        matmul = self.library.function("echo_matmul")
        matmul._invoke = None  # as with a runtime built before fusionrtInvoke
        a, b, c = matmul_args(m=256, k=64, n=32)
        self.assertEqual(matmul(a, b, c), {"M": 256, "K": 64, "N": 32})
        self.assertEqual(self.words()[:7], [0x7F0000000000, 0x7F0000000000, 0, 256, 64, 64, 1])

    def test_checks_before_calling(self):
        matmul = self.library.function("echo_matmul")
        a, b, c = matmul_args()
        with self.assertRaises(fr.ArgumentError):
            matmul(a, b, FakeTensor((128, 32), "float16"))

    def test_runtime_failure_becomes_an_exception_and_is_cleared(self):
        fail = self.library.function("echo_fail", "x: f32[?]")
        x = FakeTensor((64,), "float32")
        for _ in range(2):  # the status was cleared: the second call fails on its own
            with self.assertRaises(fr.FusionRuntimeError) as caught:
                fail(x)
            self.assertEqual(caught.exception.status, 1)
            self.assertIn("echo_fail: mgpuTensorMapEncodeTiledMemref: expected rank in 1..5, "
                          "but got 7", str(caught.exception))
            self.assertIn("[invalid argument]", str(caught.exception))
        self.assertEqual(self.library.runtime.peek_status(), 0)

    def test_missing_function(self):
        with self.assertRaisesRegex(AttributeError, "exports no function 'nope'; its functions: "
                                                    "'echo_matmul', 'echo_fail'"):
            self.library.function("nope", "x: f32[1]")
        with self.assertRaisesRegex(AttributeError, "exports no function 'echo_words'"):
            self.library.function("echo_words", "x: f32[1]")

    def test_runtime_queries_without_a_driver(self):
        runtime = self.library.runtime
        with self.assertRaisesRegex(fr.FusionRuntimeError,
                                    "fusionrtGetDeviceInfo: expected device ordinal >= 0, but "
                                    "got -1"):
            runtime.device_info(-1)
        with self.assertRaisesRegex(fr.ArgumentError, "expected a box of rank 2"):
            runtime.encode_tensor_map(FakeTensor((128, 64)), box=(64,))
        # Validation happens before the driver: the misaligned view is named.
        with self.assertRaisesRegex(fr.FusionRuntimeError,
                                    "fusionrtEncodeTensorMap: expected global address aligned to "
                                    "16 bytes, but got 0x7f0000000008"):
            runtime.encode_tensor_map(FakeTensor((128, 64), pointer=0x7F0000000008), box=(64, 64))

    def test_real_cpu_tensors_are_refused_before_the_call(self):
        needs_torch()
        matmul = self.library.function("echo_matmul")
        count = ctypes.c_int64.in_dll(self.library.cdll, "echo_count")
        count.value = -1  # echo_matmul sets it: still -1 means it was not called
        a = torch.zeros(256, 64, dtype=torch.bfloat16)
        b = torch.zeros(64, 32, dtype=torch.bfloat16)
        c = torch.zeros(256, 32, dtype=torch.float32)
        fr._torch()  # the loader has imported torch, as a call on CUDA tensors does
        for synchronize in (False, True):
            with self.assertRaisesRegex(fr.ArgumentError, "echo_matmul: argument 0 \\('a'\\): "
                                                          + CPU_DEVICE):
                matmul(a, b, c, synchronize=synchronize)
        with self.assertRaisesRegex(fr.ArgumentError, "argument 0 \\('a'\\): expected dtype "
                                                      "torch.bfloat16 \\(bf16\\), but got "
                                                      "torch.float32"):
            matmul(a.float(), b, c)
        with self.assertRaisesRegex(TypeError, "expected 3 tensor arguments"):
            matmul(a, b)
        self.assertEqual(count.value, -1)
        self.assertEqual(matmul._plans, {})
        self.assertEqual(self.library.runtime.peek_status(), 0)

    def test_tensor_maps_of_real_tensors_are_checked_before_the_driver(self):
        needs_torch()
        runtime = self.library.runtime
        a = torch.zeros(128, 64, dtype=torch.bfloat16)
        with self.assertRaisesRegex(fr.ArgumentError, "expected a box of rank 2 \\(the tensor's, "
                                                      "1..5\\), but got 1"):
            runtime.encode_tensor_map(a, box=(64,))
        with self.assertRaisesRegex(fr.ArgumentError, "expected a tensor-map dtype in u8, i32, "
                                                      "i64, f16, f32, f64, bf16, but got "
                                                      "torch.int8"):
            runtime.encode_tensor_map(a.to(torch.int8), box=(64, 64))
        # A view one element in: its data pointer is 2 bytes past an aligned one.
        view = a[:, 1:]
        with self.assertRaisesRegex(fr.FusionRuntimeError,
                                    "fusionrtEncodeTensorMap: expected global address aligned to "
                                    f"16 bytes, but got {view.data_ptr():#x}"):
            runtime.encode_tensor_map(view, box=(64, 64))


if __name__ == "__main__":
    unittest.main()
