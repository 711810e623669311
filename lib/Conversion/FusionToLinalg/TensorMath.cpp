//===- TensorMath.cpp - f32 tensor arithmetic as linalg.generic -----------===//

#include "TensorMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fusion;

//===----------------------------------------------------------------------===//
// Scalars and casts
//===----------------------------------------------------------------------===//

Value mlir::fusion::castScalar(OpBuilder &b, Location loc, Value v, Type to) {
  auto from = dyn_cast<FloatType>(v.getType());
  auto toF = dyn_cast<FloatType>(to);
  if (!from || !toF || from == toF)
    return v;
  if (from.getWidth() < toF.getWidth())
    return arith::ExtFOp::create(b, loc, toF, v);
  return arith::TruncFOp::create(b, loc, toF, v);
}

Value mlir::fusion::f32Constant(OpBuilder &b, Location l, double v) {
  return arith::ConstantOp::create(b, l, b.getF32FloatAttr(v));
}

Value mlir::fusion::mul(OpBuilder &b, Location l, Value x, Value y) {
  return arith::MulFOp::create(b, l, x, y);
}

Value mlir::fusion::add(OpBuilder &b, Location l, Value x, Value y) {
  return arith::AddFOp::create(b, l, x, y);
}

Value mlir::fusion::sub(OpBuilder &b, Location l, Value x, Value y) {
  return arith::SubFOp::create(b, l, x, y);
}

Type mlir::fusion::elementTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

Value TensorMath::f32(double v) { return f32Constant(b, loc, v); }

Value TensorMath::dim(Value t, int64_t d) {
  return tensor::DimOp::create(b, loc, t, d);
}

Value TensorMath::dimAsF32(Value t, int64_t d) {
  int64_t size = cast<RankedTensorType>(t.getType()).getDimSize(d);
  if (!ShapedType::isDynamic(size))
    return f32(static_cast<double>(size));
  Value i = arith::IndexCastOp::create(b, loc, b.getI64Type(), dim(t, d));
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), i);
}

SmallVector<OpFoldResult> TensorMath::sizes(Value t) {
  return tensor::getMixedSizes(b, loc, t);
}

Value TensorMath::splat(ArrayRef<OpFoldResult> sz, Type elemType,
                        double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sz, elemType);
  Value cst = arith::ConstantOp::create(b, loc, b.getFloatAttr(elemType, value));
  return linalg::FillOp::create(b, loc, cst, empty).getResult(0);
}

Value TensorMath::convert(Value t, Type elemType) {
  if (cast<RankedTensorType>(t.getType()).getElementType() == elemType)
    return t;
  return map({{t}}, elemType,
             [](OpBuilder &, Location, ValueRange a) { return a[0]; });
}

//===----------------------------------------------------------------------===//
// Generic builders
//===----------------------------------------------------------------------===//

Value TensorMath::generic(ArrayRef<Value> ins, ArrayRef<AffineMap> inMaps,
                          ArrayRef<OpFoldResult> outSizes, AffineMap outMap,
                          ArrayRef<utils::IteratorType> iterators,
                          Type outElemType, bool accumulate, ScalarFn fn) {
  Type f32Type = b.getF32Type();
  Type initType = accumulate ? f32Type : outElemType;
  Value init = accumulate ? splat(outSizes, f32Type, 0.0)
                          : tensor::EmptyOp::create(b, loc, outSizes, initType)
                                .getResult();
  SmallVector<AffineMap> maps(inMaps);
  maps.push_back(outMap);
  auto op = linalg::GenericOp::create(
      b, loc, init.getType(), ins, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> scalars;
        for (Value a : args.drop_back())
          scalars.push_back(isa<FloatType>(a.getType())
                                ? castScalar(nb, nloc, a, f32Type)
                                : a);
        Value r = fn(nb, nloc, scalars);
        if (accumulate)
          r = add(nb, nloc, args.back(), r);
        else
          r = castScalar(nb, nloc, r, initType);
        linalg::YieldOp::create(nb, nloc, r);
      });
  return op.getResult(0);
}

namespace {
/// The indexing map of `operand`, broadcast NumPy-style against a Full
/// operand of type `fullType` (see Bcast::Numpy).
AffineMap numpyBroadcastMap(Value operand, RankedTensorType fullType) {
  auto type = cast<RankedTensorType>(operand.getType());
  MLIRContext *ctx = type.getContext();
  unsigned rank = fullType.getRank(), r = type.getRank();
  assert(r <= rank && "a broadcast operand has at most the full rank");
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < r; ++i) {
    unsigned d = rank - r + i;
    bool repeated = type.getDimSize(i) == 1 && fullType.getDimSize(d) != 1;
    exprs.push_back(repeated ? getAffineConstantExpr(0, ctx)
                             : getAffineDimExpr(d, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}
} // namespace

Value TensorMath::broadcastGeneric(ArrayRef<Operand> ins, Type outElemType,
                                   int reduce, ScalarFn fn) {
  const Operand *full = llvm::find_if(
      ins, [](const Operand &o) { return o.bcast == Bcast::Full; });
  assert(full != ins.end() && "needs one operand spanning the iteration space");
  auto fullType = cast<RankedTensorType>(full->value.getType());
  unsigned rank = fullType.getRank();
  MLIRContext *ctx = b.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  // Built from the identity's results rather than getMajorSubMap /
  // getMinorSubMap, which return a null map for 0 results (rank 1: the rows
  // of a single row are a rank-0 tensor).
  auto rowMap = [&] {
    assert(rank >= 1 && "a row broadcast needs rank >= 1");
    return AffineMap::get(rank, 0, identity.getResults().drop_back(), ctx);
  };
  auto colMap = [&] {
    assert(rank >= 1 && "a column broadcast needs rank >= 1");
    return AffineMap::get(rank, 0, identity.getResults().take_back(), ctx);
  };

  SmallVector<Value> values;
  SmallVector<AffineMap> maps;
  for (const Operand &o : ins) {
    values.push_back(o.value);
    switch (o.bcast) {
    case Bcast::Full:
      maps.push_back(identity);
      break;
    case Bcast::Row:
      maps.push_back(rowMap());
      break;
    case Bcast::Col:
      maps.push_back(colMap());
      break;
    case Bcast::Numpy:
      maps.push_back(numpyBroadcastMap(o.value, fullType));
      break;
    }
  }
  SmallVector<OpFoldResult> all = sizes(full->value);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  if (reduce == 0)
    return generic(values, maps, all, identity, iters, outElemType,
                   /*accumulate=*/false, fn);
  if (reduce == 1) {
    iters.back() = utils::IteratorType::reduction;
    return generic(values, maps, ArrayRef(all).drop_back(), rowMap(), iters,
                   b.getF32Type(), /*accumulate=*/true, fn);
  }
  for (unsigned i = 0; i + 1 < rank; ++i)
    iters[i] = utils::IteratorType::reduction;
  return generic(values, maps, {all.back()}, colMap(), iters, b.getF32Type(),
                 /*accumulate=*/true, fn);
}

Value TensorMath::map(ArrayRef<Operand> ins, Type outElemType, ScalarFn fn) {
  return broadcastGeneric(ins, outElemType, 0, fn);
}

Value TensorMath::sumRows(ArrayRef<Operand> ins, ScalarFn fn) {
  return broadcastGeneric(ins, b.getF32Type(), 1, fn);
}

Value TensorMath::sumCols(ArrayRef<Operand> ins, ScalarFn fn) {
  return broadcastGeneric(ins, b.getF32Type(), 2, fn);
}

Value TensorMath::addTensors(Value x, Value y, Type outElemType, Bcast bcast) {
  return map({{x}, {y, bcast}}, outElemType,
             [](OpBuilder &nb, Location l, ValueRange a) {
               return add(nb, l, a[0], a[1]);
             });
}

Value TensorMath::mulTensors(Value x, Value y, Bcast bcast) {
  return map({{x}, {y, bcast}}, b.getF32Type(),
             [](OpBuilder &nb, Location l, ValueRange a) {
               return mul(nb, l, a[0], a[1]);
             });
}

Value TensorMath::matmul(Value a, Value bMat, bool transposeA,
                         bool transposeB) {
  MLIRContext *ctx = b.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  auto map = [&](AffineExpr r, AffineExpr c) {
    return AffineMap::get(3, 0, {r, c}, ctx);
  };
  AffineMap aMap = transposeA ? map(k, m) : map(m, k);
  AffineMap bMap = transposeB ? map(n, k) : map(k, n);
  OpFoldResult mSize = sizes(a)[transposeA ? 1 : 0];
  OpFoldResult nSize = sizes(bMat)[transposeB ? 0 : 1];
  using IT = utils::IteratorType;
  return generic({a, bMat}, {aMap, bMap}, {mSize, nSize}, map(m, n),
                 {IT::parallel, IT::parallel, IT::reduction}, b.getF32Type(),
                 /*accumulate=*/true,
                 [](OpBuilder &nb, Location l, ValueRange v) -> Value {
                   return mul(nb, l, v[0], v[1]);
                 });
}

//===----------------------------------------------------------------------===//
// Normalization formulas
//===----------------------------------------------------------------------===//

namespace {
int64_t innermost(Value x) {
  return cast<RankedTensorType>(x.getType()).getRank() - 1;
}
} // namespace

RMSNormResult mlir::fusion::buildRMSNorm(TensorMath &m, Value x, Value weight,
                                         double eps, Type outElemType) {
  Value n = m.dimAsF32(x, innermost(x));
  Value epsV = m.f32(eps);
  Value sumSq = m.sumRows({{x}}, [](OpBuilder &b, Location l, ValueRange a) {
    return mul(b, l, a[0], a[0]);
  });
  Value rstd = m.map({{sumSq}}, m.builder().getF32Type(),
                     [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                       Value ms = arith::DivFOp::create(b, l, a[0], n);
                       return math::RsqrtOp::create(b, l, add(b, l, ms, epsV));
                     });
  SmallVector<Operand> ins = {{x}, {rstd, Bcast::Row}};
  if (weight)
    ins.push_back({weight, Bcast::Col});
  Value y = m.map(ins, outElemType, [&](OpBuilder &b, Location l, ValueRange a) {
    Value r = mul(b, l, a[0], a[1]);
    return weight ? mul(b, l, r, a[2]) : r;
  });
  return {y, rstd};
}

LayerNormResult mlir::fusion::buildLayerNorm(TensorMath &m, Value x,
                                             Value weight, Value bias,
                                             double eps, Type outElemType) {
  Type f32 = m.builder().getF32Type();
  Value n = m.dimAsF32(x, innermost(x));
  Value epsV = m.f32(eps);
  auto divN = [&](OpBuilder &b, Location l, ValueRange a) -> Value {
    return arith::DivFOp::create(b, l, a[0], n);
  };
  Value sum = m.sumRows({{x}}, [](OpBuilder &, Location, ValueRange a) {
    return a[0];
  });
  Value mean = m.map({{sum}}, f32, divN);
  Value sumSq = m.sumRows({{x}, {mean, Bcast::Row}},
                          [](OpBuilder &b, Location l, ValueRange a) {
                            Value d = sub(b, l, a[0], a[1]);
                            return mul(b, l, d, d);
                          });
  Value rstd = m.map({{sumSq}}, f32,
                     [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                       Value var = arith::DivFOp::create(b, l, a[0], n);
                       return math::RsqrtOp::create(b, l, add(b, l, var, epsV));
                     });
  Value y = applyLayerNorm(m, x, mean, rstd, weight, bias, outElemType);
  return {y, mean, rstd};
}

Value mlir::fusion::applyLayerNorm(TensorMath &m, Value x, Value mean,
                                   Value rstd, Value weight, Value bias,
                                   Type outElemType) {
  SmallVector<Operand> ins = {{x}, {mean, Bcast::Row}, {rstd, Bcast::Row}};
  if (weight)
    ins.push_back({weight, Bcast::Col});
  if (bias)
    ins.push_back({bias, Bcast::Col});
  return m.map(ins, outElemType, [&](OpBuilder &b, Location l, ValueRange a) {
    Value r = mul(b, l, sub(b, l, a[0], a[1]), a[2]);
    unsigned next = 3;
    if (weight)
      r = mul(b, l, r, a[next++]);
    if (bias)
      r = add(b, l, r, a[next++]);
    return r;
  });
}

NormGradResult mlir::fusion::buildRMSNormGrad(TensorMath &m, Value dy, Value x,
                                              Value rstd, Value weight,
                                              Type outElemType,
                                              bool normalized, Value residual,
                                              Value rowSum) {
  Value n = m.dimAsF32(x, innermost(x));
  // a = [dy, x, rstd, weight?]; g = dy * w, x_hat = x * rstd.
  SmallVector<Operand> ins = {{dy}, {x}, {rstd, Bcast::Row}};
  if (weight)
    ins.push_back({weight, Bcast::Col});
  auto g = [&](OpBuilder &b, Location l, ValueRange a) {
    return weight ? mul(b, l, a[0], a[3]) : a[0];
  };
  auto xHat = [&](OpBuilder &b, Location l, ValueRange a) {
    return normalized ? a[1] : mul(b, l, a[1], a[2]);
  };
  Value dot = rowSum ? rowSum
                     : m.sumRows(ins, [&](OpBuilder &b, Location l, ValueRange a) {
                         return mul(b, l, g(b, l, a), xHat(b, l, a));
                       });
  // a = [ins..., dot, residual?].
  SmallVector<Operand> dxIns(ins);
  unsigned dotIdx = dxIns.size();
  dxIns.push_back({dot, Bcast::Row});
  if (residual)
    dxIns.push_back({residual});
  Value dx =
      m.map(dxIns, outElemType, [&](OpBuilder &b, Location l, ValueRange a) {
        Value meanDot = arith::DivFOp::create(b, l, a[dotIdx], n);
        Value corr = mul(b, l, xHat(b, l, a), meanDot);
        Value r = mul(b, l, a[2], sub(b, l, g(b, l, a), corr));
        return residual ? add(b, l, r, a[dotIdx + 1]) : r;
      });
  NormGradResult r{dx, {}, {}};
  if (weight)
    r.weightGrad = m.sumCols(ins, [&](OpBuilder &b, Location l, ValueRange a) {
      return mul(b, l, a[0], xHat(b, l, a));
    });
  return r;
}

NormGradResult mlir::fusion::buildLayerNormGrad(TensorMath &m, Value dy,
                                                Value x, Value mean, Value rstd,
                                                Value weight, bool withBiasGrad,
                                                Type outElemType,
                                                Value residual, Value rowSumG,
                                                Value rowDot) {
  Value n = m.dimAsF32(x, innermost(x));
  // a = [dy, x, rstd, mean?, weight?]; x_hat = (x - mean) * rstd, or x.
  SmallVector<Operand> ins = {{dy}, {x}, {rstd, Bcast::Row}};
  if (mean)
    ins.push_back({mean, Bcast::Row});
  unsigned wIdx = ins.size();
  if (weight)
    ins.push_back({weight, Bcast::Col});
  auto g = [&](OpBuilder &b, Location l, ValueRange a) {
    return weight ? mul(b, l, a[0], a[wIdx]) : a[0];
  };
  auto xHat = [&](OpBuilder &b, Location l, ValueRange a) {
    return mean ? mul(b, l, sub(b, l, a[1], a[3]), a[2]) : a[1];
  };
  Value sumG = rowSumG ? rowSumG
                       : m.sumRows(ins, [&](OpBuilder &b, Location l, ValueRange a) {
                           return g(b, l, a);
                         });
  Value dot = rowDot ? rowDot
                     : m.sumRows(ins, [&](OpBuilder &b, Location l, ValueRange a) {
                         return mul(b, l, g(b, l, a), xHat(b, l, a));
                       });
  // a = [ins..., sumG, dot, residual?].
  SmallVector<Operand> dxIns(ins);
  unsigned sumGIdx = dxIns.size();
  dxIns.push_back({sumG, Bcast::Row});
  dxIns.push_back({dot, Bcast::Row});
  if (residual)
    dxIns.push_back({residual});
  Value dx =
      m.map(dxIns, outElemType, [&](OpBuilder &b, Location l, ValueRange a) {
        Value meanG = arith::DivFOp::create(b, l, a[sumGIdx], n);
        Value meanDot = arith::DivFOp::create(b, l, a[sumGIdx + 1], n);
        Value r = sub(b, l, g(b, l, a), meanG);
        r = sub(b, l, r, mul(b, l, xHat(b, l, a), meanDot));
        r = mul(b, l, a[2], r);
        return residual ? add(b, l, r, a[sumGIdx + 2]) : r;
      });
  NormGradResult r{dx, {}, {}};
  if (weight)
    r.weightGrad = m.sumCols(ins, [&](OpBuilder &b, Location l, ValueRange a) {
      return mul(b, l, a[0], xHat(b, l, a));
    });
  if (withBiasGrad)
    r.biasGrad = m.sumCols({{dy}}, [](OpBuilder &, Location, ValueRange a) {
      return a[0];
    });
  return r;
}
