"""CUDA kernels of linked SASS alone, launched as compiled between a super kernel's dispatches,
through the binding on the stand-in driver (no GPU): taken with the signature their parameters'
sizes give, fused around in a scope and in a capture, explained, refused by name."""
import pytest

import superkernel as sk
from conftest import cuda_kernel


def test_a_linked_sass_kernel_is_a_plain_launch_between_fused_steps(fake_gpu):
    sass = fake_gpu.load(cuda_kernel("decode_global_sass.cubin"))
    ptx = fake_gpu.load(cuda_kernel("decode_global.ptx"))
    # Listed by what it can be taken with: silu_mul_global records no __launch_bounds__.
    assert sass.kernels["residual_add_global"] == {"sig": "ptr,ptr,ptr,u32", "type": "vector"}
    assert "silu_mul_global" not in sass.kernels
    with pytest.raises(sk.Incompatible, match=r"silu_mul_global.*sk_kernel_desc\.threads"):
        sass.kernel("silu_mul_global")
    silu = sass.kernel("silu_mul_global", signature="ptr,ptr,ptr,i32", threads=128)
    assert silu.signature == "ptr,ptr,ptr,i32"
    with pytest.raises(sk.Incompatible, match=r"parameter 3 is 4 bytes in its cubin, which f64 \(8 bytes\)"):
        sass.kernel("residual_add_global", signature="ptr,ptr,ptr,f64")
    add_sass = sass.kernel("residual_add_global")
    add_ptx = ptx.kernel("residual_add_global")
    buf = fake_gpu.alloc(4096)
    with fake_gpu.scope("plain") as scope:
        scope.add(add_ptx, 4, buf, buf, buf, 100)
        scope.add(add_sass, 6, buf, buf, buf, 100)
        scope.add(silu, (2, 3), buf, buf, buf, -1)
        scope.add(add_ptx, 4, buf, buf, buf, 100)
    fused = scope.superkernel
    e = fused.explain()
    assert e["dispatches"] == 4
    assert [s.get("plain_launch", False) for s in e["steps"]] == [False, True, True, False]
    assert [d["launch"] for d in e["cuda_entry"]["dispatches"]] == ["super kernel", "plain", "plain", "super kernel"]
    assert e["cuda_entry"]["dispatches"][2]["grid"] == [2, 3, 1]
    assert e["cuda_entry"]["dispatches"][2]["block"] == [128, 1, 1]
    fused.launch()
    fused.launch_repeat(3)
    add_sass.launch(5, buf, buf, buf, 7)
    fake_gpu.synchronize()
    stop = fake_gpu.alloc(4)
    with pytest.raises(sk.Incompatible, match=r"step 1 'residual_add_global' is launched as compiled"):
        fused.launch_repeat(2, stop_flag=stop)
    # Nothing to fuse; an argument read by reference.
    with pytest.raises(sk.Incompatible, match=r"each of its 2 kernels is launched as compiled"):
        with fake_gpu.scope("alone") as scope:
            scope.add(add_sass, 4, buf, buf, buf, 1)
            scope.add(add_sass, 4, buf, buf, buf, 1)
    with pytest.raises(sk.Incompatible, match=r"'residual_add_global' reads arguments by reference"):
        with fake_gpu.scope("refs") as scope:
            scope.add(add_ptx, 4, buf, buf, buf, 1)
            scope.add(add_sass, 4, sk.Ref(buf), buf, buf, 1)


def test_a_captured_plain_launch_is_one_of_the_super_kernels_dispatches(fake_gpu):
    add_sass = fake_gpu.load(cuda_kernel("decode_global_sass.cubin")).kernel("residual_add_global")
    add_ptx = fake_gpu.load(cuda_kernel("decode_global.ptx")).kernel("residual_add_global")
    buf = fake_gpu.alloc(4096)
    with fake_gpu.capture("decode") as cap:
        add_ptx.launch(4, buf, buf, buf, 10, stream=cap.stream)
        add_sass.launch(4, buf, buf, buf, 10, stream=cap.stream)
        add_ptx.launch(4, buf, buf, buf, 10, stream=cap.stream)
    e = cap.superkernel.explain()
    assert e["dispatches"] == 3
    assert e["segments"][1]["plain_launch"] is True
    cap.superkernel.launch()
    fake_gpu.synchronize()


def test_a_library_of_sass_alone_gives_plain_launches(fake_gpu):
    # nvcc -shared with code=sm_90 alone: each unit's linked cubin, read when a kernel of it is
    # taken.
    lib = fake_gpu.load(cuda_kernel("libdecode_sass.so"))
    # Those its cubins say the block of (__launch_bounds__).
    assert sorted(lib.kernels) == ["decode_attention_global", "gemv_global", "residual_add_global", "rmsnorm_global"]
    add_sass = lib.kernel("residual_add_global")
    add_ptx = fake_gpu.load(cuda_kernel("decode_global.ptx")).kernel("residual_add_global")
    buf = fake_gpu.alloc(4096)
    with fake_gpu.scope("library") as scope:
        scope.add(add_sass, 3, buf, buf, buf, 10)
        scope.add(add_ptx, 3, buf, buf, buf, 10)
    e = scope.superkernel.explain()
    assert [d["launch"] for d in e["cuda_entry"]["dispatches"]] == ["plain", "super kernel"]
    assert e["steps"][0]["module"].endswith("libdecode_sass.so (sm_90 cubin, translation unit 2 of 2)"), e["steps"][0]
    scope.superkernel.launch()
    fake_gpu.synchronize()


def test_a_plain_kernel_runs_in_the_cluster_it_is_given(fake_gpu, tmp_path):
    sass = fake_gpu.load(cuda_kernel("clusters_sass.cubin"))
    # __cluster_dims__(2, 1, 1): compiled in; __cluster_dims__(): only with one given.
    assert set(sass.kernels) == {"cluster_pairs", "cluster_any"}
    with pytest.raises(sk.Incompatible, match=r"'cluster_explicit'.*sk_kernel_desc\.cluster"):
        sass.kernel("cluster_explicit")
    explicit = sass.kernel("cluster_explicit", cluster=(2, 1))
    assert explicit.cluster == (2, 1)
    any_cluster = sass.kernel("cluster_any", cluster=4)
    add = fake_gpu.load(cuda_kernel("decode_global.ptx")).kernel("residual_add_global")
    buf = fake_gpu.alloc(8192)
    with fake_gpu.scope("clusters") as scope:
        scope.add(add, 4, buf, buf, buf, 100)
        scope.add(any_cluster, 8, buf, buf)
        scope.add(explicit, 6, buf, buf)
        scope.add(add, 4, buf, buf, buf, 100)
    e = scope.superkernel.explain()
    assert [d.get("cluster") for d in e["cuda_entry"]["dispatches"]] == [None, [4, 1, 1], [2, 1, 1], None]
    # What its cubin says: the cluster compiled in, or that one is needed.
    facts = {k["name"]: k for k in sk.inspect_module(cuda_kernel("clusters_sass.cubin"))["kernels"]}
    assert (facts["cluster_pairs"]["cluster"], facts["cluster_pairs"]["cluster_from"]) == ([2, 1, 1], "__cluster_dims__")
    assert (facts["cluster_explicit"]["needs"], facts["cluster_explicit"]["cluster_from"]) == (["cluster"], "stand-in")
    assert "cluster" not in facts["cluster_any"]
    scope.superkernel.launch()
    fake_gpu.synchronize()
    with pytest.raises(sk.Incompatible, match=r"clusters of \{4, 1, 1\} blocks \(caller\), which its grid \{6, 1, 1\}"):
        any_cluster.launch(6, buf, buf)
    # Refused by name: a fused kernel, malformed clusters, a host kernel.
    with pytest.raises(sk.Incompatible, match=r"'residual_add_global'.* is fused, and a super kernel runs in no"):
        fake_gpu.load(cuda_kernel("decode_global.ptx")).kernel("residual_add_global", cluster=2)
    with pytest.raises(sk.InvalidArgument, match=r"cluster \{4, 4, 1\} is 16 blocks, more than the 8"):
        sass.kernel("cluster_any", cluster=(4, 4))
    with pytest.raises(ValueError, match=r"cluster \(2, 0\) has an extent of 0"):
        sass.kernel("cluster_any", cluster=(2, 0))
    with pytest.raises(TypeError, match=r"cluster: a cluster has 1 to 3 extents, not 4"):
        sass.kernel("cluster_any", cluster=(1, 1, 1, 1))


def test_a_plain_kernel_takes_a_parameter_of_27_kilobytes(fake_gpu):
    # As PyTorch's multi-tensor kernels do: one struct of 27648 bytes by value.
    table = fake_gpu.load(cuda_kernel("large_params.cubin")).kernel("table_27k")
    assert table.signature == "ptr,{u64[3456]}"
    out = fake_gpu.alloc(4096)
    table.launch(2, out, [list(range(3456))])
    fake_gpu.synchronize()
    with pytest.raises(TypeError, match=r"3456"):
        table.launch(2, out, [list(range(3455))])
