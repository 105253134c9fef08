"""Explicit SIMD for the HDP sampler's fast kernel: the step factors of four candidates at once.

numba's auto-vectoriser leaves the window's factor loop scalar (the stores of the factors may alias
the table reads), so ``window_factors`` writes the LLVM IR by hand: one <4 x double> load from each
table, the same IEEE operations as ``sampler._step`` followed by its division, lane by lane, so each
lane's factor is bitwise the scalar one (no fused multiply-add: LLVM contracts nothing without
fast-math flags).
"""

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

#: Candidates per call of ``window_factors``.
LANES = 4

_VECTOR = ir.VectorType(ir.DoubleType(), LANES)


def _splat(builder, value, vector_type=_VECTOR):
    """``value`` in every lane of a vector of ``vector_type``."""
    vector = builder.insert_element(ir.Constant(vector_type, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(vector, vector, ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES))


def _load(context, builder, array_type, array, index):
    data = context.make_array(array_type)(context, builder, array).data
    return builder.load(builder.bitcast(builder.gep(data, [index]), _VECTOR.as_pointer()), align=8)


@intrinsic
def window_factors(typingctx, ratio, row, inverse_ratio, column, has_q, m, shift, alpha, base, steps, out, at):
    """``out[at + j] = R(n, u_j) * ((m + j + Q_j) * alpha) / (base + shift + j)`` for j < LANES, with
    ``R`` read from ``ratio[row + j]`` and ``Q`` from ``inverse_ratio[column + j]`` (0 unless ``has_q``);
    0 for ``j >= steps``."""
    signature = types.void(ratio, row, inverse_ratio, column, has_q, m, shift, alpha, base, steps, out, at)

    def codegen(context, builder, sig, args):
        ratio_, row_, inverse_, column_, has_q_, m_, shift_, alpha_, base_, steps_, out_, at_ = args
        offsets = ir.Constant(_VECTOR, [float(j) for j in range(LANES)])
        r = _load(context, builder, sig.args[0], ratio_, row_)
        q = builder.select(
            context.cast(builder, has_q_, sig.args[4], types.boolean),
            _load(context, builder, sig.args[2], inverse_, column_),
            ir.Constant(_VECTOR, [0.0] * LANES),
        )
        m_lanes = builder.fadd(_splat(builder, m_), offsets)
        shift_lanes = builder.fadd(_splat(builder, shift_), offsets)
        numerator = builder.fmul(r, builder.fmul(builder.fadd(m_lanes, q), _splat(builder, alpha_)))
        denominator = builder.fadd(_splat(builder, base_), shift_lanes)
        lane_type = ir.VectorType(ir.IntType(64), LANES)
        valid = builder.icmp_signed("<", ir.Constant(lane_type, list(range(LANES))), _splat(builder, steps_, lane_type))
        factors = builder.select(valid, builder.fdiv(numerator, denominator), ir.Constant(_VECTOR, [0.0] * LANES))
        data = context.make_array(sig.args[10])(context, builder, out_).data
        target = builder.bitcast(builder.gep(data, [at_]), _VECTOR.as_pointer())
        builder.store(factors, target, align=8)
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def count_below(typingctx, values, at, target):
    """How many of ``values[at .. at + LANES - 1]`` are below ``target``."""

    def codegen(context, builder, sig, args):
        values_, at_, target_ = args
        loaded = _load(context, builder, sig.args[0], values_, at_)
        below = builder.fcmp_ordered("<", loaded, _splat(builder, target_))
        bits = builder.bitcast(below, ir.IntType(LANES))
        count = builder.call(builder.module.declare_intrinsic("llvm.ctpop", [ir.IntType(LANES)]), [bits])
        return builder.zext(count, ir.IntType(64))

    return types.int64(values, at, target), codegen
