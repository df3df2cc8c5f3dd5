"""The system libbpf (``libbpf.so.1``) over ctypes: just the calls PINCH's programs need.

bcc does not work here and a compiled extension would need a compiler at install time; the
programs ship compiled (``bpf/*.o``) and libbpf 1.x, present wherever the kernel has BPF, loads
them. Each binding declares its argument and result types. libbpf 1.x returns ``-errno`` from
int calls and NULL with ``errno`` set from pointer calls; every failure becomes a
:class:`PinchError` that names the call, what it acted on, errno's message and, where obvious,
the fix. Struct layouts follow libbpf 1.1's ``bpf/libbpf.h`` and ``bpf/bpf.h`` and the kernel's
``linux/bpf.h``.

Programs attach to devices through BPF links only (``BPF_LINK_CREATE``), never through netlink
(``bpf_xdp_attach``) or a clsact qdisc's filter: a link is a file descriptor of this process, so
the kernel detaches the program when the process exits, however it exits (SIGKILL included).
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
from functools import cache
from pathlib import Path

from fullgraph.exchange.pinch.errors import PinchError

LIBRARY = "libbpf.so.1"

# linux/if_link.h
XDP_FLAGS_SKB_MODE = 1 << 1  # generic XDP: any device, after the skb is built
XDP_FLAGS_DRV_MODE = 1 << 2  # native XDP: in the driver, before the skb
# linux/bpf.h: enum bpf_attach_type. Debian 12's header (libbpf 1.1's era) stops at
# BPF_LSM_CGROUP = 43; the tcx hooks (Linux 6.6+) are the kernel's values 46 and 47.
BPF_XDP = 37
BPF_TCX_INGRESS = 46
BPF_TCX_EGRESS = 47
BPF_F_BEFORE = 1 << 3  # tcx: before the relative program, or with none (relative_fd 0) first of all
# linux/bpf.h
BPF_STATS_RUN_TIME = 0
BPF_NOEXIST = 1
BPF_ANY = 0
MAP_VALUE_ALIGN = 8  # an array map's values are laid out at this stride (kernel/bpf/arraymap.c)

NEEDS_ROOT = "needs root (CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON)"
HINTS = {
    errno.EPERM: NEEDS_ROOT,
    errno.EACCES: "the verifier or the kernel refused it: " + NEEDS_ROOT + ", or see libbpf's log above",
    errno.ENOENT: "no such object, map, program or interface",
    errno.EEXIST: "something is attached there already; detach it first",
    errno.EBUSY: "another program is attached there; detach it first",
    errno.EOPNOTSUPP: "this device or kernel does not support it (try generic XDP mode)",
}
LINK_HINTS = {
    errno.EBUSY: "another program is attached there (by netlink or another link); detach it first",
    errno.EINVAL: "this kernel cannot attach it through a BPF link (XDP links need Linux 5.9+, tcx 6.6+)",
}


class BpfLinkCreateOpts(ctypes.Structure):
    """``struct bpf_link_create_opts`` of libbpf 1.1 (``bpf/bpf.h``), the union as its 32 bytes."""

    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("flags", ctypes.c_uint32),
        ("iter_info", ctypes.c_void_p),
        ("iter_info_len", ctypes.c_uint32),
        ("target_btf_id", ctypes.c_uint32),
        ("union", ctypes.c_uint8 * 32),  # perf_event / kprobe_multi / tracing: unused here
    ]


class BpfTestRunOpts(ctypes.Structure):
    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("data_in", ctypes.c_void_p),
        ("data_out", ctypes.c_void_p),
        ("data_size_in", ctypes.c_uint32),
        ("data_size_out", ctypes.c_uint32),
        ("ctx_in", ctypes.c_void_p),
        ("ctx_out", ctypes.c_void_p),
        ("ctx_size_in", ctypes.c_uint32),
        ("ctx_size_out", ctypes.c_uint32),
        ("retval", ctypes.c_uint32),
        ("repeat", ctypes.c_int),
        ("duration", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("cpu", ctypes.c_uint32),
        ("batch_size", ctypes.c_uint32),
    ]


class BpfProgInfo(ctypes.Structure):
    """``struct bpf_prog_info`` up to ``run_cnt`` (the kernel fills what fits; the rest is not needed)."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("id", ctypes.c_uint32),
        ("tag", ctypes.c_uint8 * 8),
        ("jited_prog_len", ctypes.c_uint32),
        ("xlated_prog_len", ctypes.c_uint32),
        ("jited_prog_insns", ctypes.c_uint64),
        ("xlated_prog_insns", ctypes.c_uint64),
        ("load_time", ctypes.c_uint64),
        ("created_by_uid", ctypes.c_uint32),
        ("nr_map_ids", ctypes.c_uint32),
        ("map_ids", ctypes.c_uint64),
        ("name", ctypes.c_char * 16),
        ("ifindex", ctypes.c_uint32),
        ("gpl_compatible", ctypes.c_uint32),
        ("netns_dev", ctypes.c_uint64),
        ("netns_ino", ctypes.c_uint64),
        ("nr_jited_ksyms", ctypes.c_uint32),
        ("nr_jited_func_lens", ctypes.c_uint32),
        ("jited_ksyms", ctypes.c_uint64),
        ("jited_func_lens", ctypes.c_uint64),
        ("btf_id", ctypes.c_uint32),
        ("func_info_rec_size", ctypes.c_uint32),
        ("func_info", ctypes.c_uint64),
        ("nr_func_info", ctypes.c_uint32),
        ("nr_line_info", ctypes.c_uint32),
        ("line_info", ctypes.c_uint64),
        ("jited_line_info", ctypes.c_uint64),
        ("nr_jited_line_info", ctypes.c_uint32),
        ("line_info_rec_size", ctypes.c_uint32),
        ("jited_line_info_rec_size", ctypes.c_uint32),
        ("nr_prog_tags", ctypes.c_uint32),
        ("prog_tags", ctypes.c_uint64),
        ("run_time_ns", ctypes.c_uint64),
        ("run_cnt", ctypes.c_uint64),
    ]


assert ctypes.sizeof(BpfLinkCreateOpts) == 64 and BpfLinkCreateOpts.target_btf_id.offset == 28
assert ctypes.sizeof(BpfTestRunOpts) == 80 and BpfProgInfo.run_time_ns.offset == 192

_P = ctypes.c_void_p
_I = ctypes.c_int
_U32 = ctypes.c_uint32
SIGNATURES: dict[str, tuple[list, type | None]] = {
    "bpf_object__open_file": ([ctypes.c_char_p, _P], _P),
    "bpf_object__load": ([_P], _I),
    "bpf_object__close": ([_P], None),
    "bpf_object__find_program_by_name": ([_P, ctypes.c_char_p], _P),
    "bpf_program__fd": ([_P], _I),
    "bpf_program__attach": ([_P], _P),
    "bpf_link__destroy": ([_P], _I),
    "bpf_object__find_map_by_name": ([_P, ctypes.c_char_p], _P),
    "bpf_map__fd": ([_P], _I),
    "bpf_map__set_max_entries": ([_P, _U32], _I),
    "bpf_map__value_size": ([_P], _U32),
    "bpf_map__max_entries": ([_P], _U32),
    "bpf_map_update_elem": ([_I, _P, _P, ctypes.c_uint64], _I),
    "bpf_map_lookup_elem": ([_I, _P, _P], _I),
    "bpf_link_create": ([_I, _I, _I, ctypes.POINTER(BpfLinkCreateOpts)], _I),
    "bpf_prog_test_run_opts": ([_I, ctypes.POINTER(BpfTestRunOpts)], _I),
    "bpf_enable_stats": ([_I], _I),
    "bpf_obj_get_info_by_fd": ([_I, _P, ctypes.POINTER(_U32)], _I),
    "libbpf_strerror": ([_I, ctypes.c_char_p, ctypes.c_size_t], _I),
}
STRERROR_BUFFER = 256


@cache
def lib() -> ctypes.CDLL:
    """The loaded library with every binding declared; PinchError where it is missing."""
    try:
        library = ctypes.CDLL(LIBRARY, use_errno=True)
    except OSError as exc:
        raise PinchError(f"cannot load {LIBRARY} ({exc}): install libbpf 1.x (Debian: libbpf1)") from None
    for name, (argtypes, restype) in SIGNATURES.items():
        try:
            function = getattr(library, name)
        except AttributeError:
            raise PinchError(f"{LIBRARY} has no {name}: PINCH needs libbpf 1.1 or newer") from None
        function.argtypes, function.restype = argtypes, restype
    return library


def message(code: int) -> str:
    """errno's (or libbpf's own) message for a positive error code."""
    buffer = ctypes.create_string_buffer(STRERROR_BUFFER)
    if lib().libbpf_strerror(code, buffer, STRERROR_BUFFER) == 0:
        return buffer.value.decode()
    return os.strerror(code)


def failure(call: str, what: str, code: int, hints: dict[int, str] = HINTS) -> PinchError:
    hint = hints.get(code, HINTS.get(code))
    return PinchError(f"{call} on {what} failed: {message(code)}" + (f" ({hint})" if hint else ""))


def check(rc: int, call: str, what: str) -> int:
    """``rc`` when it is not an error, else PinchError."""
    if rc < 0:
        raise failure(call, what, -rc)
    return rc


def check_pointer(pointer: int | None, call: str, what: str) -> int:
    if not pointer:
        raise failure(call, what, ctypes.get_errno() or errno.EINVAL)
    return pointer


class BpfMap:
    """One map of a loaded object: its fd, sizes and element access."""

    def __init__(self, pointer: int, name: str):
        self.name = name
        self.fd = check(lib().bpf_map__fd(pointer), "bpf_map__fd", f"map {name}")
        self.value_size = int(lib().bpf_map__value_size(pointer))
        self.max_entries = int(lib().bpf_map__max_entries(pointer))

    def mmap(self) -> mmap.mmap:
        """The values of a BPF_F_MMAPABLE array map, shared with the kernel (stride: value size rounded to 8)."""
        stride = -(-self.value_size // MAP_VALUE_ALIGN) * MAP_VALUE_ALIGN
        size = -(-stride * self.max_entries // mmap.PAGESIZE) * mmap.PAGESIZE
        try:
            return mmap.mmap(self.fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as exc:
            raise PinchError(
                f"mmap of map {self.name} ({size} bytes) failed: {exc.strerror} (the map needs BPF_F_MMAPABLE)"
            ) from None

    def update(self, key: bytes, value: bytes, flags: int = BPF_ANY) -> None:
        rc = lib().bpf_map_update_elem(self.fd, key, value, flags)
        check(rc, "bpf_map_update_elem", f"map {self.name}")

    def lookup(self, key: bytes) -> bytes | None:
        """The value at ``key``; None where there is none."""
        value = ctypes.create_string_buffer(self.value_size)
        rc = lib().bpf_map_lookup_elem(self.fd, key, value)
        if rc == -errno.ENOENT:
            return None
        check(rc, "bpf_map_lookup_elem", f"map {self.name}")
        return value.raw


class BpfObject:
    """A compiled object file: opened, sized, loaded, then its programs and maps by name."""

    def __init__(self, path: Path):
        self.path = path
        if not path.is_file():
            raise PinchError(f"no BPF object at {path}: run scripts/build_bpf.sh (needs clang)")
        pointer = lib().bpf_object__open_file(str(path).encode(), None)
        self.pointer: int | None = check_pointer(pointer, "bpf_object__open_file", str(path))

    def _object(self) -> int:
        if self.pointer is None:
            raise PinchError(f"BPF object {self.path.name} is closed")
        return self.pointer

    def _map_pointer(self, name: str) -> int:
        pointer = lib().bpf_object__find_map_by_name(self._object(), name.encode())
        return check_pointer(pointer, "bpf_object__find_map_by_name", f"map {name} of {self.path.name}")

    def set_max_entries(self, name: str, entries: int) -> None:
        """Size a map; before :meth:`load` only."""
        rc = lib().bpf_map__set_max_entries(self._map_pointer(name), entries)
        check(rc, "bpf_map__set_max_entries", f"map {name} of {self.path.name}")

    def load(self) -> None:
        check(lib().bpf_object__load(self._object()), "bpf_object__load", self.path.name)

    def program(self, name: str) -> int:
        """The ``struct bpf_program *`` of a program."""
        pointer = lib().bpf_object__find_program_by_name(self._object(), name.encode())
        return check_pointer(pointer, "bpf_object__find_program_by_name", f"program {name} of {self.path.name}")

    def program_fd(self, name: str) -> int:
        return check(lib().bpf_program__fd(self.program(name)), "bpf_program__fd", f"program {name}")

    def map(self, name: str) -> BpfMap:
        return BpfMap(self._map_pointer(name), name)

    def close(self) -> None:
        """Unload (programs and maps live on only where still attached or mapped); idempotent."""
        if self.pointer is not None:
            lib().bpf_object__close(self.pointer)
            self.pointer = None


def attach_program(program: int, what: str) -> int:
    """Attach by the program's section (a raw tracepoint here); the ``struct bpf_link *``."""
    return check_pointer(lib().bpf_program__attach(program), "bpf_program__attach", what)


def destroy_link(link: int) -> None:
    lib().bpf_link__destroy(link)


def link_create(prog_fd: int, ifindex: int, attach_type: int, flags: int, what: str) -> int:
    """Attach a program to a device through a new BPF link; the link's fd, which this process owns.

    Closing the fd (or the process exiting, however it exits) detaches the program: nothing
    outlives the process. libbpf 1.1 passes the attach type through unchecked, so the tcx types
    it predates work. Raises PinchError, also where the kernel has no such link type.
    """
    opts = BpfLinkCreateOpts(sz=ctypes.sizeof(BpfLinkCreateOpts), flags=flags)
    rc = lib().bpf_link_create(prog_fd, ifindex, attach_type, ctypes.byref(opts))
    if rc < 0:
        raise failure("bpf_link_create", what, -rc, LINK_HINTS)
    return rc


def test_run(prog_fd: int, packet: bytes, repeat: int, what: str) -> tuple[int, int]:
    """Run a program on ``packet`` in the kernel without attaching it: (return value, ns per run)."""
    data = ctypes.create_string_buffer(packet, len(packet))
    opts = BpfTestRunOpts(
        sz=ctypes.sizeof(BpfTestRunOpts),
        data_in=ctypes.cast(data, ctypes.c_void_p),
        data_size_in=len(packet),
        repeat=repeat,
    )
    check(lib().bpf_prog_test_run_opts(prog_fd, ctypes.byref(opts)), "bpf_prog_test_run_opts", what)
    return opts.retval, opts.duration


def program_info(prog_fd: int, what: str) -> BpfProgInfo:
    info = BpfProgInfo()
    size = ctypes.c_uint32(ctypes.sizeof(info))
    rc = lib().bpf_obj_get_info_by_fd(prog_fd, ctypes.byref(info), ctypes.byref(size))
    check(rc, "bpf_obj_get_info_by_fd", what)
    return info


def enable_stats() -> int:
    """Turn on run-time statistics for every program; they stay on while the returned fd is open."""
    return check(lib().bpf_enable_stats(BPF_STATS_RUN_TIME), "bpf_enable_stats", "BPF_STATS_RUN_TIME")
