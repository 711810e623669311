//===- MemRef.h - reading MLIR's ranked memref descriptors ------*- C++ -*-===//
//
// A ranked memref descriptor as MLIR lowers it (StridedMemRefType<T, rank>):
//
//   struct { T *allocated; T *aligned; int64_t offset;
//            int64_t sizes[rank]; int64_t strides[rank]; }
//
// Sizes and strides count elements, dimension 0 is the outermost. Entry
// points receive a pointer to it and the rank separately, so it is read as an
// array of 64-bit words (pointers are 64-bit on every target we run on).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_RUNTIME_MEMREF_H
#define FUSION_RUNTIME_MEMREF_H

#include <cstdint>

namespace fusionrt {

static_assert(sizeof(void *) == sizeof(int64_t), "memref descriptors assume 64-bit pointers");

struct MemRefView {
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;

  /// The address of the first element, aligned + offset elements of
  /// `elementBytes`, computed in unsigned integers: the words come from the
  /// caller, so neither a null base nor an offset whose product overflows
  /// may reach pointer or signed arithmetic (undefined behavior); a wrong
  /// address is then refused by the checks that read it.
  char *begin(int64_t elementBytes) const {
    uintptr_t shift = static_cast<uintptr_t>(offset) * static_cast<uintptr_t>(elementBytes);
    return reinterpret_cast<char *>(reinterpret_cast<uintptr_t>(aligned) + shift);
  }

  static MemRefView read(const void *descriptor, int64_t rank) {
    const int64_t *words = static_cast<const int64_t *>(descriptor);
    char *aligned = reinterpret_cast<char *>(static_cast<intptr_t>(words[1]));
    return {aligned, words[2], words + 3, words + 3 + rank};
  }
};

} // namespace fusionrt

#endif // FUSION_RUNTIME_MEMREF_H
