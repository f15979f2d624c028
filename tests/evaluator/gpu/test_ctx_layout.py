"""The ctypes mirror of cuco_ctx matches the header: g++ prints sizeof/offsetof of every field."""

import ctypes
import subprocess

import pytest

from evaluator import toolchain
from evaluator.gpu import ctx_layout
from evaluator.gpu.ctx_layout import CucoCtx, c_field_name, make_ctx
from evaluator.toolchain import RUNTIME_DIR


@pytest.fixture(scope="module")
def header_layout(tmp_path_factory):
    folder = tmp_path_factory.mktemp("layout")
    fields = [c_field_name(name) for name, _ in CucoCtx._fields_]
    prints = "\n".join(f'  printf("{f} %zu %zu\\n", offsetof(cuco_ctx, {f}), sizeof(((cuco_ctx*)0)->{f}));'
                       for f in fields)
    src = folder / "layout.cpp"
    src.write_text('#include <stdio.h>\n#include "cuco_ctx.h"\nint main() {\n'
                   '  printf("sizeof %zu 0\\n", sizeof(cuco_ctx));\n'
                   '  printf("signal_slots %d 0\\n", (int)CUCO_SIGNAL_SLOTS);\n' + prints + "\n}\n")
    exe = folder / "layout"
    subprocess.run([str(toolchain.find_gxx()), f"-I{RUNTIME_DIR}", str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {name: (int(a), int(b)) for name, a, b in (line.split() for line in out.splitlines())}


def test_every_field_has_the_headers_offset_and_size(header_layout):
    for name, _ in CucoCtx._fields_:
        field = getattr(CucoCtx, name)
        assert (field.offset, field.size) == header_layout[c_field_name(name)], name


def test_the_struct_size_and_signal_pad_match(header_layout):
    assert ctypes.sizeof(CucoCtx) == header_layout["sizeof"][0]
    assert ctx_layout.SIGNAL_SLOTS == header_layout["signal_slots"][0]


def test_make_ctx_fills_pointers_and_refuses_too_many_inputs():
    c = make_ctx(rank=1, world=2, num_sms=66, dtype_code=2, dims=[8, 16, 32], inputs=[0x1000, 0x2000],
                 outputs=[0x3000], symm=0x4000, symm_bytes=4096, peer_symm=[0x5000, 0x4000], signals=0x6000,
                 peer_signals=[0x7000, 0x6000], epoch=3)
    assert (c.rank, c.world, c.num_sms, c.dims[2], c.in_[1], c.peer_symm[0], c.epoch) == (1, 2, 66, 32, 0x2000,
                                                                                         0x5000, 3)
    with pytest.raises(ValueError, match="inputs 5 > 4"):
        make_ctx(rank=0, world=1, num_sms=1, dtype_code=0, dims=[1], inputs=[1] * 5, outputs=[], symm=0,
                 symm_bytes=0, peer_symm=[0], signals=0, peer_signals=[0])
