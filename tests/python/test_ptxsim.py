"""The PTX simulator (tests/ptxsim) that test_simulated_gpu.py runs super kernels on: what it
reports of a kernel that is wrong (a barrier not every thread reaches, an access outside device
memory, shared memory or a register read before it is written, an instruction it does not
model), and the instructions whose meaning the comparisons there depend on, against values
worked by hand. No GPU and no libsk: PTX text in, host memory out."""
import ctypes
import os
import struct
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests"))
from ptxsim import Hang, PtxError, Simulator  # noqa: E402

HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"


def kernel(body, params=".param .u64 out", regs=""):
    return HEADER + f""".visible .entry k({params})
{{
  .reg .pred %p<8>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<16>;
  {regs}
  ld.param.u64 %rd1, [out];
{body}
  ret;
}}
"""


def run(text, words=64, grid=1, block=32, shared=0, **kw):
    out = (ctypes.c_uint32 * words)()
    sim = Simulator(text, "t", lambda: [(ctypes.addressof(out), ctypes.sizeof(out))])
    sim.launch("k", (grid, 1, 1), (block, 1, 1), shared, [struct.pack("<Q", ctypes.addressof(out))], **kw)
    return list(out)


STORE_R1 = """  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;"""


def test_a_barrier_some_threads_skip_is_a_hang_naming_where_each_waits():
    text = kernel("""  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 16;
  @%p1 bra $skip;
  bar.sync 0;
$skip:
  bar.sync 1;""")
    with pytest.raises(Hang) as e:
        run(text)
    assert "every thread waits" in str(e.value) and "bar.sync 0" in str(e.value) and "bar.sync 1" in str(e.value)


def test_one_barrier_phase_reached_by_a_reduction_and_a_sync_is_refused():
    # Threads of one block that reach one phase of a barrier by different operations (libsk's
    # step loop ends an instance with barrier.red.or on barrier 15, for every thread) are an
    # undefined barrier in PTX; the same reduction everywhere is fine.
    body = """  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra $zero;
  setp.eq.u32 %p2, %r1, 99;
  {other}
  bra.uni $done;
$zero:
  setp.eq.u32 %p2, %r1, 0;
  barrier.red.or.pred %p3, 15, %p2;
$done:
  selp.u32 %r1, 7, 0, %p3;
{store}"""
    with pytest.raises(PtxError, match=r"barrier 15 reached by (sync|or) while its phase is (or|sync)'s"):
        run(kernel(body.format(other="barrier.sync 15;\n  mov.pred %p3, 0;", store=STORE_R1)))
    assert run(kernel(body.format(other="barrier.red.or.pred %p3, 15, %p2;", store=STORE_R1)))[:32] == [7] * 32


def test_a_spin_that_never_ends_is_a_hang_past_the_budget():
    text = kernel("""$again:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra $again;""")
    with pytest.raises(Hang, match="ran past 20000 statements"):
        run(text, budget=20000)


def test_an_access_outside_device_memory_names_the_statement_and_the_thread():
    text = kernel("""  mov.u32 %r1, 7;
  st.global.u32 [%rd1+256], %r1;""")
    with pytest.raises(PtxError, match=r"st.global.u32 \[%rd1\+256\], %r1: 4 bytes at 0x[0-9a-f]+ are outside device "
                                       r"memory \(block \(0, 0, 0\), thread \(0, 0, 0\)\)"):
        run(text)


def test_shared_memory_read_before_any_thread_wrote_it_is_reported():
    text = HEADER + """.shared .align 4 .b8 tile[128];
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, tile;
  add.u32 %r4, %r3, %r2;
  setp.ne.u32 %p1, %r1, 5;
  @%p1 st.shared.u32 [%r4], %r1;
  bar.sync 0;
  ld.shared.u32 %r5, [%r4];
  ret;
}
"""
    text = text.replace(".reg .b64 %rd<4>;", ".reg .b64 %rd<4>;\n  .reg .pred %p<2>;")
    with pytest.raises(PtxError, match=r"thread \(5, 0, 0\) reads shared bytes 20..24 that no thread of its block wrote"):
        run(text)


def test_an_instruction_it_does_not_model_is_refused_by_name_at_load():
    text = kernel("""  mov.u32 %r1, 0;
  wgmma.fence.sync.aligned;""")
    with pytest.raises(PtxError, match="'wgmma.fence.sync.aligned' is not simulated"):
        run(text)


def test_warp_shuffles_and_votes_exchange_between_the_lanes():
    # Each lane: (value of lane+1 by shfl.down, clamped at 31) + 100 * (ballot of odd lanes == 0xaaaaaaaa).
    text = kernel("""  mov.u32 %r3, %tid.x;
  mul.lo.u32 %r4, %r3, 3;
  shfl.sync.down.b32 %r5|%p2, %r4, 1, 31, -1;
  and.b32 %r6, %r3, 1;
  setp.eq.u32 %p3, %r6, 1;
  vote.sync.ballot.b32 %r7, %p3, -1;
  setp.eq.u32 %p4, %r7, -1431655766;
  selp.u32 %r8, 100, 0, %p4;
  selp.u32 %r9, 1000, 0, %p2;
  add.u32 %r1, %r5, %r8;
  add.u32 %r1, %r1, %r9;
""" + STORE_R1)
    got = run(text)
    assert got[:32] == [3 * (t + 1) + 1100 for t in range(31)] + [3 * 31 + 100]


def test_integer_and_float_instructions_give_what_the_isa_says():
    text = kernel("""  mov.u32 %r10, -7;
  mov.u32 %r11, 2;
  div.s32 %r12, %r10, %r11;
  rem.s32 %r13, %r10, %r11;
  shr.s32 %r14, %r10, 1;
  shr.u32 %r15, %r10, 28;
  mul.hi.s32 %r16, %r10, %r10;
  bfe.s32 %r17, %r10, 1, 3;
  mov.f32 %f1, 0f3FC00000;
  cvt.rni.s32.f32 %r18, %f1;
  mov.f32 %f2, 0fC0200000;
  cvt.rzi.s32.f32 %r19, %f2;
  mov.f32 %f3, 0f7F800000;
  cvt.rzi.s32.f32 %r20, %f3;
  mov.f32 %f4, 0f3F800000;
  mov.f32 %f5, 0f40400000;
  div.rn.f32 %f6, %f4, %f5;
  mov.b32 %r21, %f6;
  prmt.b32 %r22, %r10, %r11, 0x3210;
  prmt.b32 %r23, %r11, %r10, 0x0123;
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.u32 [%rd1], {%r12, %r13, %r14, %r15};
  st.global.v4.u32 [%rd1+16], {%r16, %r17, %r18, %r19};
  st.global.v4.u32 [%rd1+32], {%r20, %r21, %r22, %r23};""")
    got = run(text, block=1)
    assert got[:12] == [(-3) & 0xFFFFFFFF, (-1) & 0xFFFFFFFF, (-4) & 0xFFFFFFFF, 15, 0, (-4) & 0xFFFFFFFF, 2,
                        (-2) & 0xFFFFFFFF, 0x7FFFFFFF, 0x3EAAAAAB, (-7) & 0xFFFFFFFF, 0x02000000]


def test_a_register_read_before_it_is_written_is_reported():
    text = kernel("""  mov.u32 %r2, %tid.x;
  add.u32 %r1, %r2, %r9;""" + "\n" + STORE_R1)
    with pytest.raises(PtxError, match=r"add.u32 %r1, %r2, %r9: k reads %r9, which no statement wrote"):
        run(text)


# ---- weakly ordered global memory ------------------------------------------------------------
# Block 0 writes a word (42) and raises a flag on another line; block 1's thread 0 reads the
# word's line first (into its block's L1), waits for the flag, then reads the word again (word
# 63), and tells block 0 it is done (word 48), which block 0 waits for, so block 0's stores stay
# in its store buffer for as long as nothing lets them out.
WAIT_DONE = """$wait_done:
  ld.relaxed.gpu.global.u32 %r3, [%rd1+192];
  setp.eq.u32 %p2, %r3, 0;
  @%p2 bra $wait_done;
  bra $end;
"""
READER = """$reader:
  mov.u32 %r9, %tid.x;
  setp.ne.u32 %p3, %r9, 0;
  @%p3 bra $end;
  ld.global.u32 %r4, [%rd1];
  st.global.u32 [%rd1+248], %r4;
$poll:
  ld.relaxed.gpu.global.u32 %r5, [%rd1+160];
  setp.eq.u32 %p2, %r5, 0;
  @%p2 bra $poll;
{acquire}
  ld.global.u32 %r6, [%rd1];
  st.global.u32 [%rd1+252], %r6;
  mov.u32 %r7, 1;
  st.relaxed.gpu.global.u32 [%rd1+192], %r7;
$end:"""
MESSAGE = """  mov.u32 %r1, %ctaid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $reader;
  mov.u32 %r2, 42;
  st.global.u32 [%rd1], %r2;
{release}
  mov.u32 %r3, 1;
  st.relaxed.gpu.global.u32 [%rd1+160], %r3;
""" + WAIT_DONE + READER


def message(release, acquire, memory="weak", seeds=range(8)):
    """What block 1 read after the flag, per seed."""
    text = kernel(MESSAGE.format(release=release, acquire=acquire))
    return [run(text, grid=2, block=1, seed=s, memory=memory)[63] for s in seeds]


@pytest.mark.parametrize("release, acquire", [
    ("  fence.acq_rel.gpu;", "  fence.acq_rel.gpu;"),
    ("  membar.gl;", "  fence.acquire.gpu;"),
    ("  fence.release.gpu;", "  ld.acquire.gpu.global.u32 %r8, [%rd1+160];"),
    ("  fence.sc.gpu;", "  atom.acquire.gpu.global.add.u32 %r8, [%rd1+200], 0;"),
], ids=["acq_rel", "membar+acquire", "release+ld.acquire", "sc+atom.acquire"])
def test_a_message_released_and_acquired_is_read_by_the_other_block_whatever_the_timing(release, acquire):
    assert message(release, acquire) == [42] * 8


@pytest.mark.parametrize("release, acquire, what", [
    ("", "  fence.acquire.gpu;", "release"),
    ("  fence.release.gpu;", "", "acquire"),
    ("  fence.acq_rel.cta;", "  fence.acquire.gpu;", "release at GPU scope"),
    ("  fence.release.gpu;", "  fence.acq_rel.cta;", "acquire at GPU scope"),
])
def test_a_message_without_its_release_or_acquire_is_read_stale_on_some_timing(release, acquire, what):
    # Sequentially consistent memory hides the missing fence; the weak model shows it.
    assert message(release, acquire, memory="sequential") == [42] * 8
    got = message(release, acquire)
    assert 0 in got and set(got) <= {0, 42}, (what, got)


def test_a_block_barrier_then_one_threads_release_publishes_every_threads_writes():
    # Thread 1 of block 0 writes the word; after bar.sync, thread 0 raises the flag with a
    # releasing atomic: its release covers what the barrier made it see. Without the barrier's
    # part (the flag raised by a relaxed atomic) the word is read stale on some timing.
    def body(flag):
        return kernel(f"""  mov.u32 %r1, %ctaid.x;
  mov.u32 %r9, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $reader;
  setp.ne.u32 %p3, %r9, 1;
  @%p3 bra $synced;
  mov.u32 %r2, 42;
  st.global.u32 [%rd1], %r2;
$synced:
  bar.sync 0;
  setp.ne.u32 %p3, %r9, 0;
  @%p3 bra $end;
  red.{flag}.gpu.global.add.u32 [%rd1+160], 1;
""" + WAIT_DONE + READER.format(acquire="  fence.acquire.gpu;"))
    assert [run(body("release"), grid=2, block=2, seed=s)[63] for s in range(8)] == [42] * 8
    relaxed = [run(body("relaxed"), grid=2, block=2, seed=s)[63] for s in range(8)]
    assert 0 in relaxed and set(relaxed) <= {0, 42}


def test_a_block_reads_its_own_threads_writes_after_a_barrier_and_memory_has_all_at_the_end():
    # Each thread writes its word, the block meets at bar.sync, each reads its neighbour's
    # (word 32 + tid); at the end of the launch every store has reached memory.
    text = kernel("""  mov.u32 %r2, %tid.x;
  add.u32 %r1, %r2, 100;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  bar.sync 0;
  add.u32 %r3, %r2, 1;
  and.b32 %r3, %r3, 31;
  mul.wide.u32 %rd4, %r3, 4;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.u32 %r4, [%rd5];
  st.global.u32 [%rd3+128], %r4;""")
    for s in range(4):
        out = run(text, seed=s)
        assert out[:32] == [100 + i for i in range(32)]
        assert out[32:64] == [100 + (i + 1) % 32 for i in range(32)]
