//! Multi-output fusion, FuseOps' last phase (TVM's third phase fuses injective ops into the
//! tuples that collect them; XLA calls this multi-output fusion): an output of a region that
//! its consumers' group also reads joins that group, whose kernel then writes both.

use super::{Groups, Node};
use crate::op::OpPattern;

/// Merges into `g` every output of the region whose consumers in it all ended in one group
/// `G` (see [`super`]'s docs), when
/// - neither group holds a reduction or an anchor: their kernels are one loop nest over the
///   output's shape (or a product and its epilogue), and a second output of another
///   iteration space would need a loop nest of its own, which is no saving;
/// - the output has the shape of `G`'s root and reaches every output of `G` only through
///   elementwise or broadcast ops of that shape, so the kernel's one loop nest computes it at
///   each index before the ops that read it at the same index read it, once;
/// - the merged group respects the size limit and the node is not folded to a constant;
/// - `movable(n, root)`: nothing bound between the node and `G`'s root other than dataflow
///   nodes reads it.
///
/// The merged group is computed at `G`'s root's binding. That creates no cycle: its inputs
/// are the inputs of `G` (bound before its root) and of the node's group (bound before the
/// node, which precedes `G`'s consumers of it), and every use of the node outside `G` comes
/// after the root (`movable`; its other dataflow consumers are in `G`), so the chain stays in
/// dependency order, a topological order of the groups.
///
/// Nodes are visited last to first, so an earlier output whose consumers were split between
/// `G` and a later output sees them in one group once that output has joined `G`.
pub(super) fn merge_outputs(
    nodes: &[Node],
    g: &mut Groups,
    max_group_size: usize,
    movable: impl Fn(usize, usize) -> bool,
) {
    for (n, node) in nodes.iter().enumerate().rev() {
        let src = g.find(n);
        if !node.extern_ref || node.folds || g.last[src] != n {
            continue;
        }
        let consumers: Vec<usize> = node.outputs.iter().map(|&(o, _)| g.find(o)).collect();
        let Some(&dst) = consumers.first() else { continue };
        if dst == src || consumers.iter().any(|&c| c != dst) {
            continue;
        }
        let root = g.last[dst];
        if g.worst[src].max(g.worst[dst]) > OpPattern::Injective
            || nodes[root].shape != node.shape
            || g.size[src] + g.size[dst] > max_group_size
            || !elementwise_to_outputs(nodes, g, n, dst)
            || !movable(n, root)
        {
            continue;
        }
        g.merge(src, dst);
    }
}

/// Whether every node of group `dst` reachable from node `src` is elementwise or broadcast
/// with `src`'s shape.
fn elementwise_to_outputs(nodes: &[Node], g: &mut Groups, src: usize, dst: usize) -> bool {
    let mut seen = vec![false; nodes.len()];
    let mut stack: Vec<usize> = nodes[src].outputs.iter().map(|&(o, _)| o).collect();
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut seen[n], true) || g.find(n) != dst {
            continue;
        }
        if nodes[n].pattern > OpPattern::Broadcast || nodes[n].shape != nodes[src].shape {
            return false;
        }
        stack.extend(nodes[n].outputs.iter().map(|&(o, _)| o));
    }
    true
}
