"""Build Ascend C kernels against the host emulation and run them on NumPy buffers.

    kernel = build_kernel("tests/ascendc_kernels/add_custom.cpp", "add_custom")
    result = kernel.run([x, y, z, None, tiling], block_dim=8, soc="ascend910b2")
    result.counters["gm_read_bytes"]

    # a MIX kernel (KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)): block_dim = AIC count,
    # each block = 1 AIC + 2 AIVs running concurrently with cross-core flags
    result = mix.run([x, w, out, workspace, tiling], block_dim=2, kernel_type="mix_aic_1_2")
    result.cores[1].name, result.counters_by_core_type["AIV"]

A kernel source is compiled with g++ (-std=c++20 -O2) together with the emulation runtime
into one shared library, cached under $MEGAFUSE_CACHE_DIR/emu (default ~/.cache/megafuse/emu)
by a hash of everything that changes the binary: compiler version, flags, the emulation
headers and runtime, the kernel text and the headers next to it or in extra include dirs.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from fusion.core.errors import MegafuseError
from fusion.core.soc import SocSpec, get_soc
from fusion.emu import launch_rewrite

_HERE = Path(__file__).resolve().parent
INCLUDE_DIR = _HERE / "include"
RUNTIME_SRC = _HERE / "runtime" / "emu_runtime.cpp"
CXX = os.environ.get("MEGAFUSE_CXX", "g++")
CXX_FLAGS: tuple[str, ...] = (
    "-std=c++20", "-O2", "-g1", "-pthread", "-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden",
)
MAX_ARGS = 32
_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".inc")


class EmulationError(MegafuseError):
    """A kernel broke an Ascend C rule (or could not be built/run) in the host emulation.

    For rule violations the message reads "kernel 'K' line N: ... [block b/B, file]" (on a core
    of a MIX launch "[block b/B, AIV1 (GetBlockIdx 3), file]") and `kernel`, `line`, `block`
    (and for MIX launches `core`: "AIC", "AIV", "AIV0" or "AIV1") are set."""

    _WHERE = re.compile(r"^kernel '(?P<kernel>[^']*)'(?: line (?P<line>\d+))?: ")
    _BLOCK = re.compile(r"\[block (?P<block>\d+)/\d+, (?:(?P<core>AIC|AIV\d?) \(GetBlockIdx \d+\), )?[^\]]*\]$")

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message
        m = self._WHERE.match(message)
        b = self._BLOCK.search(message)
        self.kernel: str | None = m.group("kernel") if m else None
        self.line: int | None = int(m.group("line")) if m and m.group("line") else None
        self.block: int | None = int(b.group("block")) if b else None
        self.core: str | None = b.group("core") if b else None


class EmulationBuildError(EmulationError):
    """g++ rejected the kernel source (the message starts with its first diagnostics)."""


class _Soc(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p), ("arch", ctypes.c_int32),
        ("ub_bytes", ctypes.c_uint64), ("ub_usable_bytes", ctypes.c_uint64),
        ("l1_bytes", ctypes.c_uint64), ("l0a_bytes", ctypes.c_uint64),
        ("l0b_bytes", ctypes.c_uint64), ("l0c_bytes", ctypes.c_uint64),
        ("bt_bytes", ctypes.c_uint64),
        ("cube_cores", ctypes.c_int32), ("vector_cores", ctypes.c_int32),
    ]


# run(..., kernel_type=...) -> the devkit KernelMetaType value (runtime_api.h MEGAFUSE_EMU_KERNEL_*).
KERNEL_TYPES: dict[str, int] = {
    "aiv_only": 0, "aic_only": 1, "mix_aiv_1_0": 2, "mix_aic_1_0": 3, "mix_aic_1_1": 4, "mix_aic_1_2": 5,
}
_CORE_TYPES = {0: "", 1: "AIC", 2: "AIV"}


def kernel_type_id(kernel_type: str | None) -> int:
    """"mix_aic_1_2", "KERNEL_TYPE_MIX_AIC_1_2" (any case) -> 5; None -> -1 (non-MIX, kind from the kernel)."""
    if kernel_type is None:
        return -1
    key = kernel_type.strip().lower().removeprefix("kernel_type_")
    if key not in KERNEL_TYPES:
        raise EmulationError(f"unknown kernel_type {kernel_type!r}: one of {', '.join(KERNEL_TYPES)} or None")
    return KERNEL_TYPES[key]


@dataclass(frozen=True)
class CoreInfo:
    """One emulated core of a run: `core_type` "AIC", "AIV" or "" (a non-MIX block that never
    fixed its kind, or a coupled-core chip), its `block` (0 .. block_dim-1), `sub_block_idx`
    (GetSubBlockIdx) and `block_idx` (GetBlockIdx)."""

    core_type: str
    block: int
    sub_block_idx: int
    block_idx: int

    @property
    def name(self) -> str:
        """"AIC1", "AIV3" (type + GetBlockIdx), or "block2" for a core of unknown type."""
        return f"{self.core_type}{self.block_idx}" if self.core_type else f"block{self.block}"


@dataclass(frozen=True)
class EmuResult:
    """Counters of one run: `counters` summed over all cores, `per_core[i]` for core `cores[i]`.

    Non-MIX launches have one core per block (per_core[b] is block b). MIX launches list per
    block the AIC, then its AIVs (MIX_AIC_1_2: AIC0, AIV0, AIV1, AIC1, AIV2, AIV3, ...);
    `counters_by_core_type` sums them per "AIC" / "AIV" ("" for cores of unknown type)."""

    kernel: str
    soc: str
    block_dim: int
    counters: dict[str, int]
    per_core: list[dict[str, int]] = field(repr=False)
    kernel_type: str | None = None
    cores: tuple[CoreInfo, ...] = field(default=(), repr=False)
    counters_by_core_type: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)


def cache_dir() -> Path:
    root = os.environ.get("MEGAFUSE_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "megafuse"
    return base / "emu"


_compiler_id: str | None = None


def _compiler_version() -> str:
    global _compiler_id
    if _compiler_id is None:
        try:
            out = subprocess.run([CXX, "--version"], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            raise EmulationBuildError(f"cannot run the C++ compiler '{CXX}': {e}") from None
        _compiler_id = out.splitlines()[0] if out else CXX
    return _compiler_id


def _header_files(dirs: Iterable[Path], recursive: bool) -> list[Path]:
    files: list[Path] = []
    for d in dirs:
        if not d.is_dir():
            continue
        it = d.rglob("*") if recursive else d.iterdir()
        files += sorted(p for p in it if p.is_file() and p.suffix in _HEADER_SUFFIXES)
    return files


def _digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.hexdigest()[:24]


def _compile(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        first = "\n".join(lines[:25]) + ("\n..." if len(lines) > 25 else "")
        raise EmulationBuildError(f"g++ failed to compile {what}:\n{first}")


def _atomic_build(target: Path, cmd_for: Callable[[Path], list[str]], what: str) -> None:
    """Builds into a temporary file next to target, then renames (safe for parallel runs)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=target.suffix + ".tmp")
    os.close(fd)
    try:
        _compile(cmd_for(Path(tmp)), what)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _emulator_parts() -> list[bytes]:
    parts = [_compiler_version().encode(), " ".join(CXX_FLAGS).encode()]
    for f in sorted(RUNTIME_SRC.parent.iterdir()):   # emu_runtime.cpp and the parts it includes
        parts += [f.name.encode(), f.read_bytes()]
    for f in _header_files([INCLUDE_DIR], recursive=True):
        parts += [str(f.relative_to(INCLUDE_DIR)).encode(), f.read_bytes()]
    return parts


def _runtime_object() -> Path:
    obj = cache_dir() / f"runtime-{_digest(_emulator_parts())}.o"
    if not obj.exists():
        _atomic_build(obj, lambda out: [CXX, *CXX_FLAGS, "-I", str(INCLUDE_DIR), "-c", str(RUNTIME_SRC),
                                        "-o", str(out)], "the emulation runtime")
    return obj


_loaded: dict[tuple[str, str], "EmuKernel"] = {}
_load_lock = threading.Lock()
_lib_locks: dict[str, threading.Lock] = {}
_lib_locks_lock = threading.Lock()


@dataclass(frozen=True)
class BuiltLibrary:
    """A kernel library on disk, not loaded (loading runs the source's static constructors)."""

    lib: Path
    kernel_name: str
    label: str
    built_for: SocSpec | None
    keyword_type: str | None  # "AIV_ONLY" / "AIC_ONLY" from __vector__ / __cube__, else None


def build_kernel(source: str | os.PathLike, kernel_name: str,
                 extra_include_dirs: Sequence[str | os.PathLike] = (),
                 extra_flags: Sequence[str] = (), soc: str | SocSpec | None = None) -> "EmuKernel":
    """Compiles an Ascend C kernel source (a path, or the source text itself) for the host.

    The kernel must be declared `extern "C" __global__ __aicore__ void kernel_name(...)`.
    With `soc`, the source is built for that chip: __NPU_ARCH__ is its arch (2201, 2002) and
    the kernel runs only on SoCs of that arch. A source that tests __NPU_ARCH__ needs `soc`
    (without it the macro would be undefined and arch-conditional code would silently take
    its fallback branch). `kernel<<<...>>>(...)` launches in the source are rewritten as for
    single-source programs (single_source.py).
    Raises EmulationBuildError with g++'s first diagnostics when the source does not compile,
    EmulationError when the library has no such kernel."""
    built = build_library(source, kernel_name, extra_include_dirs, extra_flags, soc)
    key = (str(built.lib), kernel_name)
    with _load_lock:
        if key not in _loaded:
            _loaded[key] = EmuKernel(built.lib, kernel_name, built.label, built.built_for)
            # a __vector__ / __cube__ kernel is launched on AIV / AIC cores (arch 2201) unless run
            # names a kernel type; KERNEL_TASK_TYPE_DEFAULT alone does not change the default
            _loaded[key].keyword_type = built.keyword_type
        return _loaded[key]


def build_library(source: str | os.PathLike, kernel_name: str,
                  extra_include_dirs: Sequence[str | os.PathLike] = (),
                  extra_flags: Sequence[str] = (), soc: str | SocSpec | None = None) -> BuiltLibrary:
    """build_kernel without loading the library (for a confined run in a child process)."""

    text_given = isinstance(source, str) and ("\n" in source or not os.path.isfile(source))
    if text_given:
        src_text = source.encode()
        src_path: Path | None = None
        label = "<kernel text>"
        local_dirs: list[Path] = []
    else:
        src_path = Path(source).resolve()
        src_text = src_path.read_bytes()
        label = str(src_path)
        local_dirs = [src_path.parent]
    spec = None if soc is None else (soc if isinstance(soc, SocSpec) else get_soc(soc))
    if spec is None and b"__NPU_ARCH__" in src_text:
        raise EmulationError(f"kernel '{kernel_name}' ({label}) tests __NPU_ARCH__: build it for a SoC "
                             "(build_kernel(..., soc='ascend910b2'), or --soc on the command line)")
    if b"<<<" in src_text or b"__mix__" in src_text:
        rewritten = launch_rewrite.preprocess(src_text.decode(errors="replace"))
        if src_path is not None:
            quoted = str(src_path).replace("\\", "\\\\").replace('"', '\\"')
            rewritten = f'#line 1 "{quoted}"\n' + rewritten
        src_text = rewritten.encode()
        src_path = None  # compile the rewritten text; local headers stay reachable (-iquote below)
    inc_dirs = [Path(d).resolve() for d in extra_include_dirs]
    extra_flags = [*extra_flags, *(launch_rewrite.arch_flags(spec) if spec is not None else [])]
    flags = [*CXX_FLAGS, *extra_flags]
    parts = _emulator_parts() + [" ".join(extra_flags).encode(), src_text]
    for f in _header_files(local_dirs + inc_dirs, recursive=False):
        parts += [str(f).encode(), f.read_bytes()]
    lib = cache_dir() / f"kernel-{_digest(parts)}.so"

    if not lib.exists():
        runtime = _runtime_object()
        if src_path is None:
            src_file = cache_dir() / f"src-{_digest([src_text])}.cpp"
            if not src_file.exists():
                src_file.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=src_file.parent, suffix=".cpp.tmp")
                with os.fdopen(fd, "wb") as f:
                    f.write(src_text)
                os.replace(tmp, src_file)
        else:
            src_file = src_path
        includes = (["-I", str(INCLUDE_DIR)] + [a for d in inc_dirs for a in ("-I", str(d))]
                    + [a for d in local_dirs for a in ("-iquote", str(d))])
        _atomic_build(lib, lambda out: [CXX, *flags, *includes, "-shared", str(src_file), str(runtime),
                                        "-o", str(out)], f"kernel '{kernel_name}' ({label})")

    keyword_type = launch_rewrite.keyword_types(src_text.decode(errors="replace")).get(kernel_name)
    return BuiltLibrary(lib, kernel_name, label, spec, keyword_type if keyword_type in ("AIV_ONLY", "AIC_ONLY") else None)


class EmuKernel:
    """One kernel of a built library; `run` executes it on the emulated cores."""

    def __init__(self, lib_path: Path, kernel_name: str, source_label: str = "", built_for: SocSpec | None = None):
        self.kernel_name = kernel_name
        self.built_for = built_for  # the SoC whose __NPU_ARCH__ the source was compiled with
        self.keyword_type: str | None = None  # "AIV_ONLY" for a __vector__ kernel, "AIC_ONLY" for __cube__
        self.lib_path = Path(lib_path)
        self.source = source_label
        self._lib = ctypes.CDLL(str(lib_path))
        try:
            self._fn = getattr(self._lib, kernel_name)
        except AttributeError:
            raise EmulationError(
                f"kernel '{kernel_name}' not found in {source_label or lib_path}: declare it "
                f"extern \"C\" __global__ __aicore__ void {kernel_name}(...)") from None
        self._run = self._lib.megafuse_emu_run
        self._run.restype = ctypes.c_int
        self._run.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                              ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint64),
                              ctypes.POINTER(_Soc), ctypes.c_char_p, ctypes.c_int]
        self._run_typed = self._lib.megafuse_emu_run_typed
        self._run_typed.restype = ctypes.c_int
        self._run_typed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint64),
                                    ctypes.POINTER(_Soc), ctypes.c_char_p, ctypes.c_int]
        self._counters = self._lib.megafuse_emu_counters
        self._counters.restype = ctypes.c_int
        self._counters.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.c_int]
        self._num_cores = self._lib.megafuse_emu_num_cores
        self._num_cores.restype = ctypes.c_int
        self._core_info = self._lib.megafuse_emu_core_info
        self._core_info.restype = ctypes.c_int
        self._core_info.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int64)]
        buf = ctypes.create_string_buffer(4096)
        self._lib.megafuse_emu_counter_names(buf, len(buf))
        self.counter_names: tuple[str, ...] = tuple(buf.value.decode().split(","))
        with _lib_locks_lock:  # the runtime keeps per-library state: one lock per library
            self._lock = _lib_locks.setdefault(str(self.lib_path), threading.Lock())

    def run(self, args: Sequence[object], block_dim: int, soc: str | SocSpec = "ascend910b2",
            kernel_type: str | None = None) -> EmuResult:
        """Runs the kernel on block_dim blocks.

        args, in kernel parameter order: a C-contiguous numpy array (GM buffer, written in
        place), bytes/bytearray (GM buffer; bytes are copied, so read-only), None (null
        pointer) or an int (integer scalar parameter).

        kernel_type (arch 2201 only) is how the host launches it, as the device runtime would
        from the kernel's KERNEL_TASK_TYPE_DEFAULT, which must then agree:
          None           non-MIX: blocks one after the other, each fixed to AIV or AIC by the
                         kernel (its KERNEL_TASK_TYPE_DEFAULT or first buffer)
          "aiv_only"     blocks one after the other on AIV cores ("aic_only": AIC cores)
          "mix_aic_1_2"  block_dim blocks of 1 AIC + 2 AIVs, all cores of the launch running
                         concurrently with cross-core flags ("mix_aic_1_1": 1 AIC + 1 AIV;
                         "mix_aic_1_0" / "mix_aiv_1_0": block_dim AICs / AIVs with the
                         cross-core scheduler, mode 0 only)
        The "KERNEL_TYPE_MIX_AIC_1_2" spelling is accepted too."""
        spec = soc if isinstance(soc, SocSpec) else get_soc(soc)
        if self.built_for is not None and self.built_for.arch != spec.arch:
            raise EmulationError(
                f"kernel '{self.kernel_name}' was built for {self.built_for.name} (__NPU_ARCH__ "
                f"{self.built_for.arch}) and cannot run on {spec.name} (arch {spec.arch}): build it with soc='{spec.name}'")
        if kernel_type is None and self.keyword_type is not None and spec.arch == "2201":
            kernel_type = self.keyword_type.lower()
        type_id = kernel_type_id(kernel_type)
        if len(args) > MAX_ARGS:
            raise EmulationError(f"kernel '{self.kernel_name}': at most {MAX_ARGS} arguments are supported")
        ptrs = (ctypes.c_void_p * max(1, len(args)))()
        sizes = (ctypes.c_uint64 * max(1, len(args)))()
        keep: list[object] = []
        for i, a in enumerate(args):
            ptrs[i], sizes[i] = self._pointer(i, a, keep)
        c_soc = _Soc(spec.name.encode(), int(spec.arch), spec.ub_bytes, spec.ub_usable_bytes,
                     spec.l1_bytes, spec.l0a_bytes, spec.l0b_bytes, spec.l0c_bytes, spec.bt_bytes,
                     int(spec.cube_cores), int(spec.vector_cores))
        err = ctypes.create_string_buffer(8192)
        with self._lock:
            rc = self._run_typed(ctypes.cast(self._fn, ctypes.c_void_p), self.kernel_name.encode(), type_id,
                                 int(block_dim), len(args), ptrs, sizes, ctypes.byref(c_soc), err, len(err))
            if rc != 0:
                raise EmulationError(err.value.decode(errors="replace"))
            n = len(self.counter_names)
            total = self._read_counters(-1, n)
            count = self._num_cores()
            per_core = [self._read_counters(i, n) for i in range(count)]
            info = (ctypes.c_int64 * 4)()
            cores = []
            for i in range(count):
                self._core_info(i, info)
                cores.append(CoreInfo(_CORE_TYPES.get(int(info[0]), ""), int(info[1]), int(info[2]), int(info[3])))
        by_type: dict[str, dict[str, int]] = {}
        for core, row in zip(cores, per_core):
            acc = by_type.setdefault(core.core_type, dict.fromkeys(self.counter_names, 0))
            for k, v in row.items():
                acc[k] += v
        name = None if type_id < 0 else next(k for k, v in KERNEL_TYPES.items() if v == type_id)
        return EmuResult(self.kernel_name, spec.name, int(block_dim), total, per_core, name, tuple(cores), by_type)

    def _read_counters(self, core: int, n: int) -> dict[str, int]:
        out = (ctypes.c_uint64 * n)()
        self._counters(core, out, n)
        return dict(zip(self.counter_names, (int(v) for v in out)))

    def _pointer(self, i: int, a: object, keep: list[object]) -> tuple[int | None, int]:
        if a is None:
            return None, 0
        if isinstance(a, np.ndarray):
            if not a.flags.c_contiguous:
                raise EmulationError(f"kernel '{self.kernel_name}' argument {i} is not C-contiguous; pass "
                                     "np.ascontiguousarray(x) (outputs are written in place)")
            keep.append(a)
            return a.ctypes.data, a.nbytes
        if isinstance(a, bytearray):
            buf = (ctypes.c_char * len(a)).from_buffer(a) if a else None
            keep.append(buf)
            return (ctypes.addressof(buf) if buf is not None else None), len(a)
        if isinstance(a, (bytes, memoryview)):
            data = bytes(a)
            buf = ctypes.create_string_buffer(data, len(data))
            keep.append(buf)
            return ctypes.addressof(buf), len(data)
        if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
            return int(a) & 0xFFFFFFFFFFFFFFFF, 0
        raise EmulationError(f"kernel '{self.kernel_name}' argument {i}: unsupported type {type(a).__name__} "
                             "(numpy array, bytes, bytearray, None or int)")
