from ctypes import c_void_p, c_long, c_int
import torch
import math
import random
import os
import tempfile
from math import inf, nan
from cmath import nanj
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.utils import maybe_profile
from torch._inductor.codegen.memory_planning import _align as align
from torch import device, empty_strided
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
import triton
import triton.language as tl
from torch._inductor.runtime.triton_heuristics import start_graph, end_graph
from torch._C import _cuda_getCurrentRawStream as get_raw_stream

aten = torch.ops.aten
inductor_ops = torch.ops.inductor
_quantized = torch.ops._quantized
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
assert_alignment = torch._C._dynamo.guards.assert_alignment
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
empty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
empty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu
empty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
alloc_from_pool = torch.ops.inductor._alloc_from_pool
async_compile = AsyncCompile()
empty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p
_frozen_param10 = None  # device(type='cuda', index=0) torch.float32 (64,) (1,) 7f0c61720b90
_frozen_param12 = None  # device(type='cuda', index=0) torch.float32 (10,) (1,) 7f0c61720c30
_frozen_param44 = None  # device(type='cuda', index=0) torch.float32 (32, 1, 3, 3) (9, 9, 3, 1) 7f09ce9d5b80
_frozen_param50 = None  # device(type='cuda', index=0) torch.float32 (32,) (1,) 7f09ce9d6cb0
_frozen_param46 = None  # device(type='cuda', index=0) torch.float32 (64, 32, 3, 3) (288, 1, 96, 32) 7f09ce9d5c70
_frozen_param51 = None  # device(type='cuda', index=0) torch.float32 (64,) (1,) 7f09ce9d4190
_frozen_param48 = None  # device(type='cuda', index=0) torch.float32 (64, 64, 3, 3) (576, 1, 192, 64) 7f09ce9d5c20
_frozen_param52 = None  # device(type='cuda', index=0) torch.float32 (64,) (1,) 7f09ce9d6da0
_frozen_param33 = None  # device(type='cuda', index=0) torch.float32 (64, 64) (1, 64) 7f09ce966580
_frozen_param34 = None  # device(type='cuda', index=0) torch.float32 (64, 10) (1, 64) 7f09ce9665d0


# kernel path: <cache>/nf/cnfikcqr767aqehh5naunoso5d3flztg3bp7sjmrkiaquztvswjc.py
# Topologically Sorted Source Nodes: [input_1, input_3], Original ATen: [aten.convolution, aten.relu]
# Source node to ATen node mapping:
#   input_1 => convolution_default_11
#   input_3 => relu
# Graph fragment:
#   %buf0 : Tensor "f32[32, 32, 16, 16][8192, 256, 16, 1]cuda:0" = PlaceHolder[target=buf0]
#   %_frozen_param50 : Tensor "f32[32][1]cuda:0" = PlaceHolder[target=_frozen_param50]
#   %convolution_default_11 : Tensor "f32[32, 32, 16, 16][8192, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.convolution.default](args = (%arg19_1, %mul_tensor_10, %add_tensor_2, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})
#   %relu : Tensor "f32[32, 32, 16, 16][8192, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%convolution_default_11,), kwargs = {})
#   return %relu
triton_poi_fused_convolution_relu_0 = async_compile.triton('triton_poi_fused_convolution_relu_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'y': 1024, 'x': 256}, tile_hint=TileHint.DEFAULT,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'out_ptr0': '*fp32', 'ynumel': 'i32', 'xnumel': 'i32', 'YBLOCK': 'constexpr', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid2D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_convolution_relu_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'y': 2097280, 'x': 1048576}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_convolution_relu_0(in_ptr0, in_ptr1, out_ptr0, ynumel, xnumel, YBLOCK : tl.constexpr, XBLOCK : tl.constexpr):
    ynumel = 1024
    xnumel = 256
    yoffset = tl.program_id(1) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]
    ymask = tl.full([YBLOCK], True, tl.int1)[:, None]
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]
    xmask = xindex < xnumel
    x2 = xindex
    y3 = yindex
    y0 = (yindex % 32)
    y1 = yindex // 32
    tmp0 = tl.load(in_ptr0 + (x2 + 256*y3), xmask, eviction_policy='evict_last')
    tmp1 = tl.load(in_ptr1 + (y0), None, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1, 1], 0, tl.int32)
    tmp4 = triton_helpers.maximum(tmp3, tmp2)
    tl.store(out_ptr0 + (y0 + 32*x2 + 8192*y1), tmp4, xmask)
''', device_str='cuda')


# kernel path: <cache>/4w/c4wcuwcofyekowim5vdiqwo3zrt7omqyezb4uvgkntzqgudtydwk.py
# Topologically Sorted Source Nodes: [input_1, input_3, input_4, input_6], Original ATen: [aten.convolution, aten.relu]
# Source node to ATen node mapping:
#   input_1 => convolution_default_11
#   input_3 => relu
#   input_4 => convolution_default_10
#   input_6 => relu_1
# Graph fragment:
#   %buf2 : Tensor "f32[32, 64, 16, 16][16384, 1, 1024, 64]cuda:0" = PlaceHolder[target=buf2]
#   %_frozen_param51 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=_frozen_param51]
#   %convolution_default_11 : Tensor "f32[32, 32, 16, 16][8192, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.convolution.default](args = (%arg19_1, %mul_tensor_10, %add_tensor_2, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})
#   %relu : Tensor "f32[32, 32, 16, 16][8192, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%convolution_default_11,), kwargs = {})
#   %convolution_default_10 : Tensor "f32[32, 64, 16, 16][16384, 1, 1024, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.convolution.default](args = (%relu, %mul_tensor_8, %add_tensor_1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})
#   %relu_1 : Tensor "f32[32, 64, 16, 16][16384, 1, 1024, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%convolution_default_10,), kwargs = {})
#   return %relu_1
triton_poi_fused_convolution_relu_1 = async_compile.triton('triton_poi_fused_convolution_relu_1', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 524288}, 
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_convolution_relu_1', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 6291712}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_convolution_relu_1(in_out_ptr0, in_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 524288
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x2 = xindex
    x0 = (xindex % 64)
    tmp0 = tl.load(in_out_ptr0 + (x2), None)
    tmp1 = tl.load(in_ptr0 + (x0), None, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1], 0, tl.int32)
    tmp4 = triton_helpers.maximum(tmp3, tmp2)
    tl.store(in_out_ptr0 + (x2), tmp4, None)
''', device_str='cuda')


# kernel path: <cache>/rz/crzxzdqerdkc22sygjztuswpvao2he5ixpakxoo2l7gb6y6hafmf.py
# Topologically Sorted Source Nodes: [input_1, input_3, input_4, input_6, input_7], Original ATen: [aten.convolution, aten.relu, aten.max_pool2d_with_indices]
# Source node to ATen node mapping:
#   input_1 => convolution_default_11
#   input_3 => relu
#   input_4 => convolution_default_10
#   input_6 => relu_1
#   input_7 => _low_memory_max_pool_with_offsets
# Graph fragment:
#   %relu_1 : Tensor "f32[32, 64, 16, 16][16384, 1, 1024, 64]cuda:0" = PlaceHolder[target=relu_1]
#   %convolution_default_11 : Tensor "f32[32, 32, 16, 16][8192, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.convolution.default](args = (%arg19_1, %mul_tensor_10, %add_tensor_2, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})
#   %relu : Tensor "f32[32, 32, 16, 16][8192, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%convolution_default_11,), kwargs = {})
#   %convolution_default_10 : Tensor "f32[32, 64, 16, 16][16384, 1, 1024, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.convolution.default](args = (%relu, %mul_tensor_8, %add_tensor_1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})
#   %relu_1 : Tensor "f32[32, 64, 16, 16][16384, 1, 1024, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%convolution_default_10,), kwargs = {})
#   %_low_memory_max_pool_with_offsets : [num_users=1] = call_function[target=torch.ops.prims._low_memory_max_pool_with_offsets.default](args = (%relu_1, [2, 2], [2, 2], [0, 0], [1, 1], False), kwargs = {})
#   return %getitem
triton_poi_fused_convolution_max_pool2d_with_indices_relu_2 = async_compile.triton('triton_poi_fused_convolution_max_pool2d_with_indices_relu_2', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 131072}, 
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_convolution_max_pool2d_with_indices_relu_2', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 4, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 3145728}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_convolution_max_pool2d_with_indices_relu_2(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 131072
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x0 = (xindex % 64)
    x1 = ((xindex // 64) % 8)
    x2 = xindex // 512
    x3 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + 128*x1 + 2048*x2), None)
    tmp1 = tl.load(in_ptr0 + (64 + x0 + 128*x1 + 2048*x2), None)
    tmp3 = tl.load(in_ptr0 + (1024 + x0 + 128*x1 + 2048*x2), None)
    tmp5 = tl.load(in_ptr0 + (1088 + x0 + 128*x1 + 2048*x2), None)
    tmp2 = triton_helpers.maximum(tmp0, tmp1)
    tmp4 = triton_helpers.maximum(tmp2, tmp3)
    tmp6 = triton_helpers.maximum(tmp4, tmp5)
    tl.store(out_ptr0 + (x3), tmp6, None)
''', device_str='cuda')


# kernel path: <cache>/zh/czhoclcbxnug4tq3r6xa2wrznpyvd3n6onllftmgoaf4vqqsv3eq.py
# Topologically Sorted Source Nodes: [input_1, input_3, input_4, input_6, input_7, input_8, input_10, input_11], Original ATen: [aten.convolution, aten.relu, aten.max_pool2d_with_indices, aten.mean]
# Source node to ATen node mapping:
#   input_1 => convolution_default_11
#   input_10 => relu_2
#   input_11 => mean
#   input_3 => relu
#   input_4 => convolution_default_10
#   input_6 => relu_1
#   input_7 => _low_memory_max_pool_with_offsets
#   input_8 => convolution_default_9
# Graph fragment:
#   %buf5 : Tensor "f32[32, 64, 8, 8][4096, 1, 512, 64]cuda:0" = PlaceHolder[target=buf5]
#   %_frozen_param52 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=_frozen_param52]
#   %buf6 : Tensor "f32[32, 64, 1, 1][64, 1, 2048, 2048]cuda:0" = PlaceHolder[target=buf6]
#   %convolution_default_11 : Tensor "f32[32, 32, 16, 16][8192, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.convolution.default](args = (%arg19_1, %mul_tensor_10, %add_tensor_2, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})
#   %relu : Tensor "f32[32, 32, 16, 16][8192, 256, 16, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%convolution_default_11,), kwargs = {})
#   %convolution_default_10 : Tensor "f32[32, 64, 16, 16][16384, 1, 1024, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.convolution.default](args = (%relu, %mul_tensor_8, %add_tensor_1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})
#   %relu_1 : Tensor "f32[32, 64, 16, 16][16384, 1, 1024, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%convolution_default_10,), kwargs = {})
#   %_low_memory_max_pool_with_offsets : [num_users=1] = call_function[target=torch.ops.prims._low_memory_max_pool_with_offsets.default](args = (%relu_1, [2, 2], [2, 2], [0, 0], [1, 1], False), kwargs = {})
#   %convolution_default_9 : Tensor "f32[32, 64, 8, 8][4096, 1, 512, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.convolution.default](args = (%getitem, %mul_tensor_6, %add_tensor, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})
#   %relu_2 : Tensor "f32[32, 64, 8, 8][4096, 1, 512, 64]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%convolution_default_9,), kwargs = {})
#   %mean : Tensor "f32[32, 64, 1, 1][64, 1, 1, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.mean.dim](args = (%relu_2, [-1, -2], True), kwargs = {})
#   return %buf6,%mean
triton_per_fused_convolution_max_pool2d_with_indices_mean_relu_3 = async_compile.triton('triton_per_fused_convolution_max_pool2d_with_indices_mean_relu_3', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.persistent_reduction(
    size_hints={'x': 2048, 'r0_': 64},
    reduction_hint=ReductionHint.OUTER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]], (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_per_fused_convolution_max_pool2d_with_indices_mean_relu_3', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': None, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 1, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 540928, 'r0_': 0}}
)
@triton.jit
def triton_per_fused_convolution_max_pool2d_with_indices_mean_relu_3(in_out_ptr0, in_ptr0, in_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 2048
    r0_numel = 64
    R0_BLOCK: tl.constexpr = 64
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_2 = r0_index
    x0 = (xindex % 64)
    x1 = xindex // 64
    x3 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + 64*r0_2 + 4096*x1), xmask, other=0.0)
    tmp1 = tl.load(in_ptr1 + (x0), xmask, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1, 1], 0, tl.int32)
    tmp4 = triton_helpers.maximum(tmp3, tmp2)
    tmp5 = tl.broadcast_to(tmp4, [XBLOCK, R0_BLOCK])
    tmp7 = tl.where(xmask, tmp5, 0)
    tmp8 = tl.sum(tmp7, 1)[:, None].to(tl.float32)
    tmp9 = tl.full([1, 1], 64.0, tl.float32)
    tmp10 = (tmp8 / tmp9)
    tl.debug_barrier()
    tl.store(in_out_ptr0 + (x3), tmp10, xmask)
''', device_str='cuda')


# kernel path: <cache>/pz/cpzlkq74ccc7omwgorjn7gmz5qu2eqffornszdgpms2asnlbpbay.py
# Topologically Sorted Source Nodes: [input_13, input_14], Original ATen: [aten.addmm, aten.relu]
# Source node to ATen node mapping:
#   input_13 => add_tensor_3
#   input_14 => relu_3
# Graph fragment:
#   %_frozen_param10 : Tensor "f32[64][1]cuda:0" = PlaceHolder[target=_frozen_param10]
#   %mm_default : Tensor "f32[32, 64][64, 1]cuda:0" = PlaceHolder[target=mm_default]
#   %add_tensor_3 : Tensor "f32[32, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg10_1, %mm_default), kwargs = {})
#   %relu_3 : Tensor "f32[32, 64][64, 1]cuda:0"[num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%add_tensor_3,), kwargs = {})
#   return %relu_3
triton_poi_fused_addmm_relu_4 = async_compile.triton('triton_poi_fused_addmm_relu_4', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 2048}, 
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]], (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_addmm_relu_4', 'mutated_arg_names': ['in_out_ptr0'], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 2, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 24832}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_addmm_relu_4(in_out_ptr0, in_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 2048
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = (xindex % 64)
    x2 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask, eviction_policy='evict_last')
    tmp1 = tl.load(in_out_ptr0 + (x2), xmask)
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1], 0, tl.int32)
    tmp4 = triton_helpers.maximum(tmp3, tmp2)
    tl.store(in_out_ptr0 + (x2), tmp4, xmask)
''', device_str='cuda')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def recursively_apply_fns(self, fns):
        new_callables = []
        for fn, c in zip(fns, self.partitions):
            new_callables.append(fn(c))
        self.partitions = new_callables

    def call(self, args):
        arg19_1, = args
        args.clear()
        assert_size_stride(arg19_1, (32, 1, 16, 16), (256, 256, 16, 1))
        with torch.cuda._DeviceGuard(0):
            torch.cuda.set_device(0)
            # Topologically Sorted Source Nodes: [input_1], Original ATen: [aten.convolution]
            buf0 = extern_kernels.convolution(arg19_1, _frozen_param44, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None)
            assert_size_stride(buf0, (32, 32, 16, 16), (8192, 256, 16, 1), 'torch.ops.aten.convolution.default')
            del arg19_1
            buf1 = empty_strided_cuda((32, 32, 16, 16), (8192, 1, 512, 32), torch.float32)
            # Topologically Sorted Source Nodes: [input_1, input_3], Original ATen: [aten.convolution, aten.relu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_convolution_relu_0.run(buf0, _frozen_param50, buf1, 1024, 256, stream=stream0)
            del buf0
            # Topologically Sorted Source Nodes: [input_1, input_3, input_4], Original ATen: [aten.convolution, aten.relu]
            buf2 = extern_kernels.convolution(buf1, _frozen_param46, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None)
            assert_size_stride(buf2, (32, 64, 16, 16), (16384, 1, 1024, 64), 'torch.ops.aten.convolution.default')
            del buf1
            buf3 = buf2; del buf2  # reuse
            # Topologically Sorted Source Nodes: [input_1, input_3, input_4, input_6], Original ATen: [aten.convolution, aten.relu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_convolution_relu_1.run(buf3, _frozen_param51, 524288, stream=stream0)
            buf4 = empty_strided_cuda((32, 64, 8, 8), (4096, 1, 512, 64), torch.float32)
            # Topologically Sorted Source Nodes: [input_1, input_3, input_4, input_6, input_7], Original ATen: [aten.convolution, aten.relu, aten.max_pool2d_with_indices]
            stream0 = get_raw_stream(0)
            triton_poi_fused_convolution_max_pool2d_with_indices_relu_2.run(buf3, buf4, 131072, stream=stream0)
            del buf3
            # Topologically Sorted Source Nodes: [input_1, input_3, input_4, input_6, input_7, input_8], Original ATen: [aten.convolution, aten.relu, aten.max_pool2d_with_indices]
            buf5 = extern_kernels.convolution(buf4, _frozen_param48, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None)
            assert_size_stride(buf5, (32, 64, 8, 8), (4096, 1, 512, 64), 'torch.ops.aten.convolution.default')
            del buf4
            buf6 = empty_strided_cuda((32, 64, 1, 1), (64, 1, 2048, 2048), torch.float32)
            buf7 = buf6; del buf6  # reuse
            # Topologically Sorted Source Nodes: [input_1, input_3, input_4, input_6, input_7, input_8, input_10, input_11], Original ATen: [aten.convolution, aten.relu, aten.max_pool2d_with_indices, aten.mean]
            stream0 = get_raw_stream(0)
            triton_per_fused_convolution_max_pool2d_with_indices_mean_relu_3.run(buf7, buf5, _frozen_param52, 2048, 64, stream=stream0)
            del buf5
            buf8 = empty_strided_cuda((32, 64), (64, 1), torch.float32)
            # Topologically Sorted Source Nodes: [input_1, input_3, input_4, input_6, input_7, input_8, input_10, input_11, input_12, input_13], Original ATen: [aten.convolution, aten.relu, aten.max_pool2d_with_indices, aten.mean, aten.view, aten.addmm]
            extern_kernels.mm(reinterpret_tensor(buf7, (32, 64), (64, 1), 0), _frozen_param33, out=buf8)
            del buf7
            buf9 = buf8; del buf8  # reuse
            # Topologically Sorted Source Nodes: [input_13, input_14], Original ATen: [aten.addmm, aten.relu]
            stream0 = get_raw_stream(0)
            triton_poi_fused_addmm_relu_4.run(buf9, _frozen_param10, 2048, stream=stream0)
            buf10 = empty_strided_cuda((32, 10), (10, 1), torch.float32)
            # Topologically Sorted Source Nodes: [input_13, input_14, input_15], Original ATen: [aten.addmm, aten.relu]
            extern_kernels.addmm(_frozen_param12, buf9, _frozen_param34, alpha=1, beta=1, out=buf10)
            del buf9
        return (buf10, )

runner = Runner(partitions=[])
call = runner.call
recursively_apply_fns = runner.recursively_apply_fns


def get_args():
    from torch._dynamo.testing import rand_strided
    global _frozen_param10
    _frozen_param10 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    global _frozen_param12
    _frozen_param12 = rand_strided((10, ), (1, ), device='cuda:0', dtype=torch.float32)
    global _frozen_param44
    _frozen_param44 = rand_strided((32, 1, 3, 3), (9, 9, 3, 1), device='cuda:0', dtype=torch.float32)
    global _frozen_param50
    _frozen_param50 = rand_strided((32, ), (1, ), device='cuda:0', dtype=torch.float32)
    global _frozen_param46
    _frozen_param46 = rand_strided((64, 32, 3, 3), (288, 1, 96, 32), device='cuda:0', dtype=torch.float32)
    global _frozen_param51
    _frozen_param51 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    global _frozen_param48
    _frozen_param48 = rand_strided((64, 64, 3, 3), (576, 1, 192, 64), device='cuda:0', dtype=torch.float32)
    global _frozen_param52
    _frozen_param52 = rand_strided((64, ), (1, ), device='cuda:0', dtype=torch.float32)
    global _frozen_param33
    _frozen_param33 = rand_strided((64, 64), (1, 64), device='cuda:0', dtype=torch.float32)
    global _frozen_param34
    _frozen_param34 = rand_strided((64, 10), (1, 64), device='cuda:0', dtype=torch.float32)
    arg19_1 = rand_strided((32, 1, 16, 16), (256, 256, 16, 1), device='cuda:0', dtype=torch.float32)
    return [arg19_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    from torch._inductor.utils import print_performance
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat)


if __name__ == "__main__":
    from torch._inductor.wrapper_benchmark import compiled_module_main
    args = get_args()
    compiled_module_main('None', lambda times, repeat: benchmark_compiled_module(args, times=times, repeat=repeat))
