//===- RowExchange.h - a norm row's statistics across CTAs ------*- C++ -*-===//
//
// When a norm's row spans several CTAs, each CTA holds partial statistics of
// its slice of the row (RMSNorm: the sum of squares; LayerNorm: the slice's
// mean and centered sum of squares, merged with Chan's formula) and the
// whole row's need the others'. Two ways across:
//
//  - a thread-block cluster along N: each CTA st.async's its rows' partials
//    into slot [rank][row] of every peer's shared memory (the address from
//    mapa), completing the bytes on the peer's mbarrier; the slots are
//    double-buffered by tile parity for the persistent loop;
//  - global memory (global rows): each tile stores its rows' partials in a
//    [rows][tiles_n][2] f32 buffer, fences, and bumps its row block's
//    counter; a consumer of the row polls the counter until all tiles_n
//    tiles are published, then merges them.
//
// Arch-neutral: who the store leader and the row leaders are (they depend on
// the MMA engine's accumulator layout and the kernel's roles) is given as
// callbacks that build the condition where it is needed.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_ROWEXCHANGE_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_ROWEXCHANGE_H

#include "KernelBuilder.h"

#include <functional>

namespace mlir::fusion {

struct RowExchangeShape {
  int64_t tileM = 0, tileN = 0, clusterN = 1;
  /// The cluster's slots: their byte offset in shared memory, and the bytes
  /// of one round's [clusterN][tile_m] f32 buffer.
  int64_t slotsOffset = 0, slotBytes = 0;
  /// LayerNorm (mean and centered sum of squares) rather than RMSNorm (the
  /// sum of squares).
  bool layerNorm = false;
  /// The tile rows a thread holds, from its row rowInTile: the wgmma
  /// fragment's rows rowInTile and rowInTile + 8 (sm_90a), or its one row
  /// (tcgen05.ld 32x32b, sm_100a: {0}). send and clusterRowSums take and
  /// give a value per row.
  SmallVector<int64_t, 2> rowOffsets = {0, 8};
  /// The bytes a round's barrier waits for: 0 for all of slotBytes; less
  /// where the tile's rows are split among groups of threads, each with
  /// barriers of its own (RowExchange::barrierBase) for its rows' slots.
  int64_t armBytes = 0;
};

class RowExchange : public KernelBuilder {
public:
  RowExchange(const KernelBuilder &kb, RowExchangeShape shape)
      : KernelBuilder(kb), shape(shape) {}

  //===--- Cluster: DSMEM slots ---------------------------------------===//

  /// Round `round` of tile `tileCount`: buffer 2 round + tileCount % 2 of
  /// [clusterN][tile_m] slots in every CTA of the cluster, with its mbarrier.
  /// The store leader arms the local barrier for clusterN x tile_m x 4 bytes;
  /// each row leader st.async's its rows' partials (rows rowInTile +
  /// rowOffsets[h]) into slot [rank][row] of every peer (itself included),
  /// completing the bytes on the peer's barrier. A buffer is reused two
  /// tiles later, which a peer reaches only after this CTA sent it the next
  /// tile's partials, i.e. after this CTA read this tile's slots.
  void send(ArrayRef<Value> partial, Value rowInTile, Value tileCount,
            int64_t round);
  /// The same for one row per thread, with the roles given: `armer` arms
  /// the local barrier of the round (once per tile and round), `sender`
  /// st.async's `partial`, row `row`'s, to every peer (the grad epilogue
  /// warps, which compute the rows' sums themselves).
  void sendRow(Value partial, Value row, Value tileCount, int64_t round,
               Value sender, Value armer);
  /// Waits until round `round` of tile `tileCount` has arrived from every
  /// peer; returns its slots, [clusterN][tile_m] f32.
  ///
  /// A cluster of one (an attention unit of one head) exchanges nothing:
  /// the slots are plain shared memory (no st.async, which the PTX model
  /// gives no meaning inside a one-CTA cluster: compute-sanitizer's memcheck
  /// reports each such store; no barrier armed or awaited), wait is
  /// `localSync` (which its user must set), and clusterRowSums returns the
  /// partials themselves.
  bool isLocal() const { return shape.clusterN == 1; }
  Value wait(Value tileCount, int64_t round);
  /// The whole-row sums: one round, then the clusterN slots of the rows
  /// rowInTile + rowOffsets[h] added, in rank order from 0. `inFlight`, if
  /// given, is emitted between the send and the wait (work that hides the
  /// round trip).
  void clusterRowSums(ArrayRef<Value> partial, Value rowInTile,
                      Value tileCount, int64_t round,
                      MutableArrayRef<Value> total,
                      function_ref<void()> inFlight = {});
  /// LayerNorm over the cluster: each row's slice mean and centered sum of
  /// squares go to every peer (rounds 0 and 1, both in flight before either
  /// is awaited); the row's mean is the peers' means weighted by their
  /// slices' columns inside N (the CTA's slice starts at column blockCol),
  /// its centered sum of squares adds each peer's and its columns x (its
  /// mean - the row's)^2 (Chan), in rank order; one value per row offset.
  void clusterSliceStats(ArrayRef<Value> sliceMean, ArrayRef<Value> sliceM2,
                         Value rowInTile, Value tileCount, Value blockCol,
                         Value nF, MutableArrayRef<Value> mean,
                         MutableArrayRef<Value> m2);

  //===--- Global rows -------------------------------------------------===//

  /// Publishing a tile: every thread fences its partial-statistics stores at
  /// GPU scope; after `barrier` the store leader adds 1 to the row block's
  /// counter. Publishing never waits on another CTA.
  void publishTile(Value blockRow, Value counters,
                   function_ref<void()> barrier);
  /// The poller (`isPoller`) spins on the counter of the row block at
  /// `blockRow` until all tiles_n tiles are published; after `barrier`
  /// every thread acquires the partials.
  void waitRowBlock(Value blockRow, Value counters,
                    function_ref<Value()> isPoller,
                    function_ref<void()> barrier);
  /// Chan's merge of two (count, mean, centered sum of squares) triples; an
  /// empty pair stays (0, 0, 0).
  SmallVector<Value> chanMerge(ValueRange x, ValueRange y);
  /// Row `row`'s (clamped to M - 1) mean and centered sum of squares
  /// (RMSNorm: 0 and the sum of squares) over all tiles_n tiles of
  /// `partials`. The `lanes` lanes of the row, `stride` apart in the warp,
  /// lane i of them merging tiles i, i + lanes, ..., then a butterfly.
  std::pair<Value, Value> globalRowStats(Value partials, Value row,
                                         Value laneOfRow, int64_t lanes,
                                         int64_t stride);

  /// The columns of the tile_n-wide slice starting at column `col` that lie
  /// inside N, as f32 (a LayerNorm slice's weight in the merge).
  Value columnsInN(Value col);

  RowExchangeShape shape;
  /// Builds where this thread's barriers start in slotBars (unset: at 0): a
  /// group of threads that exchanges its own rows of the tile, at its own
  /// pace, uses barriers of its own (armed for shape.armBytes) over the
  /// shared slots. Built at each use (a register held across a kernel's
  /// loop can cost more than rebuilding it).
  std::function<Value()> barrierBase;
  int64_t groups = 1;
  /// The cluster's slot barriers ([2 rounds x 2 tile parities]), the CTA's
  /// rank in the cluster, the problem's M and N, the tiles of a row block.
  Value slotBars, rank, m, n, numTilesN;
  /// Build the conditions "this thread arms the slot barrier / bumps the
  /// counter" and "this thread holds the first columns of its rows".
  std::function<Value()> isStoreLeader, isRowLeader;
  /// In a cluster of one, what orders the senders' slot stores before the
  /// readers' loads (see isLocal).
  std::function<void()> localSync;

private:
  /// st.async of `bits` into `slot` of every peer (itself included),
  /// completing 4 bytes on the peer's `bar`; in a cluster of one, a plain
  /// store into the CTA's own slot.
  void storeToPeers(Value slot, Value bits, Value bar);
  /// The barrier of slot buffer `buffer` (barrierBase + buffer).
  Value barrierOf(int64_t round, Value tileCount);
  int64_t armedBytes() const;
};

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_ROWEXCHANGE_H
