//! Anchors into the group that consumes them, FuseOps' last step (our rule, not TVM's): a
//! dense layer whose output is sliced into gates (`split` of `nn.dense`, an LSTM or GRU cell)
//! runs in the same kernel as the gate arithmetic. TVM keeps an anchor's injective consumers
//! apart because its schedules tile the anchor's loops; here the product writes a kernel temp
//! (it does already, for its epilogue) and the consumers read that temp as they would read
//! an input, so the fused kernel moves the same bytes as the two kernels did, minus a kernel
//! call and an output tensor.

use super::{Groups, Node};
use crate::op::OpPattern;

/// Merges each group holding an anchor (`OutEWiseFusable`) into group `G` when
/// - the anchor group's root is its only node read outside it, and it is read only within
///   the region (no other output), by nodes all in `G`, through injective or simpler edges
///   (an edge into another anchor's weight operand is `Opaque`);
/// - `G` holds no reduction (its kernel is one loop nest over its outputs, fed by the temps
///   of the anchors merged into it, or an anchor and its epilogue), and the merged group
///   respects the size limit;
/// - the anchor group is not folded to a constant.
///
/// The merged group is computed at `G`'s root. Nothing but `G` reads the anchor group's
/// values, and its inputs are bound before it, so the chain stays in dependency order.
pub(super) fn merge_anchors(nodes: &[Node], g: &mut Groups, max_group_size: usize) {
    for (n, node) in nodes.iter().enumerate() {
        let src = g.find(n);
        if g.last[src] != n || g.pattern[src] != OpPattern::OutEWiseFusable || node.extern_ref || node.folds {
            continue;
        }
        if node.outputs.is_empty() || node.outputs.iter().any(|&(_, edge)| edge > OpPattern::Injective) {
            continue;
        }
        let consumers: Vec<usize> = node.outputs.iter().map(|&(o, _)| g.find(o)).collect();
        let Some(&dst) = consumers.first() else { continue };
        if dst == src
            || consumers.iter().any(|&c| c != dst)
            || g.worst[dst] > OpPattern::OutEWiseFusable
            || g.size[src] + g.size[dst] > max_group_size
        {
            continue;
        }
        g.merge(src, dst);
        g.pattern[dst] = OpPattern::OutEWiseFusable;
    }
}
